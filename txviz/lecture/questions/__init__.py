"""Predict-then-reveal questions: their kinds, the truth the live model gives at reveal time, scoring
and tallies. A model question's truth is never stored in the lecture file, so another model gives its own.

Each kind is one class in its own module, registered under its name; the app draws its answer widget from
the class's ``answer_form``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from txviz.core.errors import UserError

# The kinds, one line each: importing a kind's class registers it, in the order messages list them.
# isort: off
from txviz.lecture.questions.attends_to import AttendsTo
from txviz.lecture.questions.next_token import NextToken
from txviz.lecture.questions.number import Number
from txviz.lecture.questions.choice import Choice

# isort: on
from txviz.lecture.questions.base import (
    KINDS,
    N_CANDIDATES,
    NUMBER,
    OPTION,
    TOKEN,
    TYPED_TOKEN,
    AnswerForm,
    Question,
    Truth,
    fields,
    find_token,
    need,
    next_distribution,
    number_fields,
    read_fields,
    register,
    text_tokens,
)
from txviz.lecture.questions.number import MEASURES, N_BINS, target_id

__all__ = [
    "KINDS", "MEASURES", "N_BINS", "N_CANDIDATES", "NUMBER", "OPTION", "TOKEN", "TYPED_TOKEN", "AnswerForm",
    "AttendsTo", "Choice", "NextToken", "Number", "Question", "Truth", "bin_labels", "choices", "fields",
    "find_token", "is_right", "need", "next_distribution", "number_fields", "question_from", "register",
    "tally", "target_id", "text_tokens", "truth", "truth_label",
]  # fmt: skip


def question_from(data: Any) -> Question:
    """A question from a lecture file's mapping, or a UserError saying what its answer rule lacks."""
    if not isinstance(data, dict):
        raise UserError("a question must be a mapping with kind and prompt.")
    kind, prompt = data.get("kind"), data.get("prompt")
    if kind not in KINDS:
        raise UserError(f"a question's kind must be one of {', '.join(KINDS)}, not {kind!r}.")
    if not isinstance(prompt, str) or not prompt.strip():
        raise UserError(f"the {kind} question has no prompt.")
    known = fields()
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise UserError(
            f"the {kind} question has no field {', '.join(unknown)}; its fields are {', '.join(known)}."
        )
    cls = KINDS[kind]
    cls.check(data)
    if "answer" not in cls.__dataclass_fields__ and data.get("answer") is not None:
        raise UserError(f"the {kind} question stores an answer; the live model gives it at reveal time.")
    return cls.build(read_fields(data, kind) | {"kind": kind, "prompt": prompt.strip()})


def truth(question: Question, loaded=None) -> Truth:
    """The answer now: computed by the live model for a model question, read from the file for a choice."""
    return question.truth(loaded)


def choices(question: Question, loaded=None) -> tuple[str, ...]:
    """What the asker offers: the options of a choice; a next-token question's four (the file's, or the
    model's likeliest four in alphabetical order, so their order tells nothing); the text's tokens."""
    return question.choices(loaded)


def is_right(question: Question, answer: Any, truth: Truth) -> bool:
    """Whether an answer matches the truth (a number within the question's tolerance)."""
    return answer is not None and question.is_right(answer, truth)


def bin_labels(question: Question) -> list[str]:
    """A question's tally bins, listed even with no answer (a number's: N_BINS equal parts of its range)."""
    return question.bins() or []


def tally(question: Question, answers: Iterable[Any], truth: Truth | None = None) -> dict[str, int]:
    """How many gave each answer, by label; choices and number bins listed even with no answer."""
    tokens = truth.tokens if truth is not None else ()
    counts = Counter(label for a in answers if (label := question.label(a, tokens)) is not None)
    bins = question.bins()
    if bins is not None:
        return {label: counts[label] for label in bins}
    return dict(counts.most_common())


def truth_label(question: Question, truth: Truth) -> str | None:
    """The tally label the truth falls under (a number's bin), to mark it in a tally."""
    return question.label(truth.value, truth.tokens)
