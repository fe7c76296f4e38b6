"""Predict-then-reveal questions: their kinds, the truth the live model gives at reveal time, scoring
and tallies. A model question's truth is never stored in the lecture file, so another model gives its own."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from txviz.core.attention import entropy
from txviz.core.candidates import Candidates, top_candidates
from txviz.core.errors import UserError, require_kind
from txviz.core.running import run
from txviz.core.tokens import readable_tokens, special_flags
from txviz.core.tracing import encode, trace_text

KINDS = ("attends_to", "next_token", "number", "choice")
MEASURES = ("probability", "entropy")  # what a number question asks for
N_CANDIDATES = 4  # a next-token question offers four tokens to choose among
NUMBERS = ("layer", "head", "low", "high", "tolerance")
N_BINS = 5  # a number question's tally groups answers in this many equal bins of its range


@dataclass(frozen=True)
class Question:
    """One question; which fields matter depends on ``kind`` (see ``question_from``)."""

    kind: str
    prompt: str
    text: str = ""  # what the model reads (model questions)
    model: str = ""  # the model that answers; "" = the lecture's model
    layer: int = 0
    head: int = 0
    word: str | int = ""  # the query token: its text (first match) or its index
    hide_special: bool = False  # attends_to: [CLS], [SEP] and the like cannot be the answer
    measure: str = ""  # number: "probability" (of ``target`` next) or "entropy" (of the head's row)
    target: str = ""  # number/probability: the token whose probability is asked
    low: float = 0.0
    high: float = 1.0
    tolerance: float = 0.0
    options: tuple[str, ...] = ()  # choice; next_token: the four to choose among (else the model's)
    answer: int | None = None  # choice: the right option's index, stored since no model decides it
    explain: str = ""  # said at reveal

    @property
    def asks_model(self) -> bool:
        return self.kind != "choice"


@dataclass(frozen=True, eq=False)
class Truth:
    """What the live model (or, for a choice, the file) says, with what explains it."""

    kind: str
    value: Any  # token index (attends_to), token text (next_token), float (number), option (choice)
    label: str  # the value as the reveal says it
    tokens: tuple[str, ...] = ()  # attends_to / entropy: the text's tokens
    row: np.ndarray | None = None  # attends_to / entropy: the head's row for the query token
    query: int | None = None  # that token's index
    candidates: Candidates | None = None  # next_token / probability: the likeliest next tokens


def _need(data: dict, fields: tuple[str, ...], kind: str, rule: str) -> None:
    missing = [f for f in fields if data.get(f) in (None, "")]
    if missing:
        raise UserError(
            f"the {kind} question has no answer rule: give {rule} (missing {', '.join(missing)})."
        )


def _number(data: dict, field: str) -> float:
    try:
        return float(data[field])
    except (TypeError, ValueError) as error:
        raise UserError(f"a number question's {field} must be a number, not {data[field]!r}.") from error


def question_from(data: Any) -> Question:
    """A question from a lecture file's mapping, or a UserError saying what its answer rule lacks."""
    if not isinstance(data, dict):
        raise UserError("a question must be a mapping with kind and prompt.")
    kind, prompt = data.get("kind"), data.get("prompt")
    if kind not in KINDS:
        raise UserError(f"a question's kind must be one of {', '.join(KINDS)}, not {kind!r}.")
    if not isinstance(prompt, str) or not prompt.strip():
        raise UserError(f"the {kind} question has no prompt.")
    if kind == "attends_to":
        _need(data, ("text", "layer", "head", "word"), kind, "the text, layer, head and word")
    elif kind == "next_token":
        _need(data, ("text",), kind, "the text whose next token is asked")
    elif kind == "number":
        _need(
            data, ("text", "measure", "low", "high", "tolerance"), kind, "text, measure, low, high, tolerance"
        )
        if data["measure"] not in MEASURES:
            raise UserError(f"a number question's measure must be one of {', '.join(MEASURES)}.")
        rule = ("target",) if data["measure"] == "probability" else ("layer", "head", "word")
        _need(data, rule, kind, " and ".join(rule))
        if not _number(data, "low") < _number(data, "high") or _number(data, "tolerance") <= 0:
            raise UserError("a number question needs low < high and a tolerance above 0.")
    options = tuple(str(o) for o in data.get("options") or ())
    answer = data.get("answer")
    if kind == "choice":
        _need(data, ("options", "answer"), kind, "options and the answer")
        if isinstance(answer, str) and answer in options:
            answer = options.index(answer)
        if not isinstance(answer, int) or isinstance(answer, bool) or not 0 <= answer < len(options):
            raise UserError(f"the choice question's answer {answer!r} is not one of its options.")
    elif answer is not None:
        raise UserError(f"the {kind} question stores an answer; the live model gives it at reveal time.")
    fields = {k: data[k] for k in ("text", "model", "word", "measure", "target", "explain") if k in data}
    try:
        numbers = {k: type(getattr(Question, k))(data[k]) for k in NUMBERS if k in data}
    except (TypeError, ValueError) as error:
        raise UserError(f"the {kind} question's {', '.join(NUMBERS)} must be numbers ({error}).") from error
    return Question(
        kind=kind,
        prompt=prompt.strip(),
        hide_special=bool(data.get("hide_special", False)),
        options=options,
        answer=answer,
        **{k: v if k == "word" else str(v) for k, v in fields.items()},
        **numbers,
    )


def text_tokens(loaded, question: Question) -> tuple[str, ...]:
    """The readable tokens of the question's text under this model (no forward pass)."""
    return readable_tokens(loaded.tokenizer, encode(loaded, question.text).ids)[0]


def find_token(tokens: tuple[str, ...], word: str | int, model: str = "the model") -> int:
    """The index of the question's query token: ``word`` as an index, or the first token reading as it."""
    if isinstance(word, int):
        if not 0 <= word < len(tokens):
            raise UserError(f"token {word} is past the {len(tokens)} tokens {model} makes of the text.")
        return word
    wanted = str(word).strip().lower()
    for i, token in enumerate(tokens):
        if token.strip().lower() == wanted:
            return i
    raise UserError(f"{model} makes no token {word!r} of the text; its tokens are {', '.join(tokens)}.")


def _check_head(question: Question, n_layers: int, n_heads: int, model: str) -> None:
    if not (0 <= question.layer < n_layers and 0 <= question.head < n_heads):
        raise UserError(
            f"the question asks for layer {question.layer}, head {question.head}; "
            f"{model} has {n_layers} layers of {n_heads} heads."
        )


def next_distribution(loaded, text: str) -> torch.Tensor:
    """The model's probabilities of the token after ``text`` (V,), from one pass through the front door."""
    require_kind(loaded, ("decoder",), "predict the next token")
    ids = torch.tensor([encode(loaded, text).ids], device=loaded.device)
    logits = run(loaded.model, outputs=("logits",), input_ids=ids).logits
    return logits[0, -1].float().softmax(-1).cpu()


def target_id(loaded, target: str) -> int:
    """The first token id of ``target`` as the model would write it after a text."""
    ids = loaded.tokenizer(target, add_special_tokens=False)["input_ids"]
    if not ids:
        raise UserError(f"{loaded.name} makes no token of {target!r}.")
    return int(ids[0])


def truth(question: Question, loaded=None) -> Truth:
    """The answer now: computed by the live model for a model question, read from the file for a choice."""
    if question.kind == "choice":
        return Truth("choice", question.answer, question.options[question.answer])
    if question.kind == "next_token" or question.measure == "probability":
        probs = next_distribution(loaded, question.text)
        candidates = top_candidates(loaded.tokenizer, probs, N_CANDIDATES)
        if question.kind == "next_token":
            return Truth("next_token", candidates.tokens[0], candidates.tokens[0], candidates=candidates)
        p = float(probs[target_id(loaded, question.target)])
        return Truth("number", p, f"{p:.3f}", candidates=candidates)
    trace = trace_text(loaded, question.text)
    _check_head(question, trace.n_layers, trace.n_heads, loaded.name)
    query = find_token(trace.query_tokens, question.word, loaded.name)
    row = np.asarray(trace.head(question.layer, question.head)[query], dtype=np.float64)
    tokens = tuple(trace.key_tokens)
    if question.kind == "number":  # a head's entropy at that token, in nats
        value = float(entropy(torch.from_numpy(row)))
        return Truth("number", value, f"{value:.3f} nats", tokens, row, query)
    if question.hide_special:
        row = np.where(np.array(trace.special), 0.0, row)
        row = row / row.sum() if row.sum() > 0 else row
    key = int(np.argmax(row))
    return Truth("attends_to", key, f"{key}: {tokens[key]}", tokens, row, query)


def choices(question: Question, loaded=None) -> tuple[str, ...]:
    """What the asker offers: the options of a choice; a next-token question's four (the file's, or the
    model's likeliest four in alphabetical order, so their order tells nothing)."""
    if question.kind == "choice" or (question.kind == "next_token" and question.options):
        return question.options
    if question.kind == "next_token":
        probs = next_distribution(loaded, question.text)
        return tuple(sorted(top_candidates(loaded.tokenizer, probs, N_CANDIDATES).tokens, key=str.lower))
    if question.kind == "attends_to":
        tokens = text_tokens(loaded, question)
        if question.hide_special:
            flags = special_flags(loaded.tokenizer, encode(loaded, question.text).ids)
            return tuple(t if not f else "" for t, f in zip(tokens, flags, strict=True))
        return tokens
    return ()


def _same_token(a: str, b: str) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def is_right(question: Question, answer: Any, truth: Truth) -> bool:
    """Whether an answer matches the truth (a number within the question's tolerance)."""
    if answer is None:
        return False
    if question.kind == "next_token":
        return _same_token(answer, truth.value)
    if question.kind == "number":
        try:
            return abs(float(answer) - float(truth.value)) <= question.tolerance + 1e-9
        except (TypeError, ValueError):
            return False
    return type(answer) is int and answer == truth.value


def bin_labels(question: Question) -> list[str]:
    """A number question's tally bins: N_BINS equal parts of its range."""
    edges = np.linspace(question.low, question.high, N_BINS + 1)
    return [f"{a:.2f}–{b:.2f}" for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _label(question: Question, answer: Any, tokens: tuple[str, ...]) -> str | None:
    """The tally label of one answer, or None for an answer this question cannot take."""
    if question.kind == "choice":
        ok = type(answer) is int and 0 <= answer < len(question.options)
        return question.options[answer] if ok else None
    if question.kind == "attends_to":
        if type(answer) is not int or answer < 0 or (tokens and answer >= len(tokens)):
            return None
        return f"{answer}: {tokens[answer]}" if tokens else f"token {answer}"
    if question.kind == "next_token":
        return str(answer).strip().lower() or None if isinstance(answer, str) else None
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value) or not question.low <= value <= question.high:
        return None
    span = (value - question.low) / (question.high - question.low)
    return bin_labels(question)[min(int(span * N_BINS), N_BINS - 1)]


def tally(question: Question, answers: Iterable[Any], truth: Truth | None = None) -> dict[str, int]:
    """How many gave each answer, by label; choices and number bins listed even with no answer."""
    tokens = truth.tokens if truth is not None else ()
    counts = Counter(label for a in answers if (label := _label(question, a, tokens)) is not None)
    if question.kind == "choice":
        return {option: counts[option] for option in question.options}
    if question.kind == "number":
        return {label: counts[label] for label in bin_labels(question)}
    return dict(counts.most_common())


def truth_label(question: Question, truth: Truth) -> str | None:
    """The tally label the truth falls under (a number's bin), to mark it in a tally."""
    return _label(question, truth.value, truth.tokens)
