"""A number the model gives (a token's probability, a head's entropy): the student guesses on a slider."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from txviz.core.attention import entropy
from txviz.core.candidates import top_candidates
from txviz.core.errors import UserError
from txviz.lecture.questions.base import (
    N_CANDIDATES,
    NUMBER,
    AnswerForm,
    Question,
    Truth,
    as_given,
    head_row,
    need,
    next_distribution,
    register,
)

MEASURES = ("probability", "entropy")  # what a number question asks for
N_BINS = 5  # a number question's tally groups answers in this many equal bins of its range


def _number(data: dict, name: str) -> float:
    try:
        return float(data[name])
    except (TypeError, ValueError) as error:
        raise UserError(f"a number question's {name} must be a number, not {data[name]!r}.") from error


def target_id(loaded, target: str) -> int:
    """The first token id of ``target`` as the model would write it after a text."""
    ids = loaded.tokenizer(target, add_special_tokens=False)["input_ids"]
    if not ids:
        raise UserError(f"{loaded.name} makes no token of {target!r}.")
    return int(ids[0])


@register("number")
@dataclass(frozen=True)
class Number(Question):
    """``measure``: the probability of ``target`` next, or the entropy of a head's row for ``word``;
    right within ``tolerance``, guessed between ``low`` and ``high``."""

    layer: int = 0
    head: int = 0
    word: str | int = as_given()
    measure: str = ""
    target: str = ""
    low: float = 0.0
    high: float = 1.0
    tolerance: float = 0.0

    marker = "triangle-up"

    @classmethod
    def check(cls, data: dict) -> None:
        need(
            data,
            ("text", "measure", "low", "high", "tolerance"),
            "number",
            "text, measure, low, high, tolerance",
        )
        if data["measure"] not in MEASURES:
            raise UserError(f"a number question's measure must be one of {', '.join(MEASURES)}.")
        rule = ("target",) if data["measure"] == "probability" else ("layer", "head", "word")
        need(data, rule, "number", " and ".join(rule))
        if not _number(data, "low") < _number(data, "high") or _number(data, "tolerance") <= 0:
            raise UserError("a number question needs low < high and a tolerance above 0.")

    @property
    def answer_form(self) -> AnswerForm:
        return AnswerForm(NUMBER, self.low, self.high)

    def truth(self, loaded=None) -> Truth:
        if self.measure == "probability":
            probs = next_distribution(loaded, self.text)
            candidates = top_candidates(loaded.tokenizer, probs, N_CANDIDATES)
            p = float(probs[target_id(loaded, self.target)])
            return Truth("number", p, f"{p:.3f}", candidates=candidates)
        trace, row, query = head_row(loaded, self.text, self.layer, self.head, self.word)
        value = float(entropy(torch.from_numpy(row)))  # the head's entropy at that token, in nats
        return Truth("number", value, f"{value:.3f} nats", tuple(trace.key_tokens), row, query)

    def is_right(self, answer: Any, truth: Truth) -> bool:
        try:
            return abs(float(answer) - float(truth.value)) <= self.tolerance + 1e-9
        except (TypeError, ValueError):
            return False

    def label(self, answer: Any, tokens: tuple[str, ...]) -> str | None:
        """The bin of the range the answer falls in (outside the range: none)."""
        try:
            value = float(answer)
        except (TypeError, ValueError):
            return None
        if not math.isfinite(value) or not self.low <= value <= self.high:
            return None
        span = (value - self.low) / (self.high - self.low)
        return self.bins()[min(int(span * N_BINS), N_BINS - 1)]

    def bins(self) -> list[str]:
        """N_BINS equal parts of its range."""
        edges = np.linspace(self.low, self.high, N_BINS + 1)
        return [f"{a:.2f}–{b:.2f}" for a, b in zip(edges[:-1], edges[1:], strict=True)]
