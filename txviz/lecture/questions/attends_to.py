"""Which token a head's query token attends to most: the student clicks a token of the text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from txviz.core.tokens import special_flags
from txviz.core.tracing import encode
from txviz.lecture.questions.base import (
    TOKEN,
    AnswerForm,
    Question,
    Truth,
    as_given,
    head_row,
    need,
    register,
    text_tokens,
)


@register("attends_to")
@dataclass(frozen=True)
class AttendsTo(Question):
    """The largest weight in the row of ``word`` (a token's text, first match, or its index) of a head."""

    layer: int = 0
    head: int = 0
    word: str | int = as_given()
    hide_special: bool = False  # [CLS], [SEP] and the like cannot be the answer

    choices_need_model = True
    marker = "square"

    @classmethod
    def check(cls, data: dict) -> None:
        need(data, ("text", "layer", "head", "word"), "attends_to", "the text, layer, head and word")

    @property
    def answer_form(self) -> AnswerForm:
        return AnswerForm(TOKEN)

    def truth(self, loaded=None) -> Truth:
        trace, row, query = head_row(loaded, self.text, self.layer, self.head, self.word)
        tokens = tuple(trace.key_tokens)
        if self.hide_special:
            row = np.where(np.array(trace.special), 0.0, row)
            row = row / row.sum() if row.sum() > 0 else row
        key = int(np.argmax(row))
        return Truth("attends_to", key, f"{key}: {tokens[key]}", tokens, row, query)

    def choices(self, loaded=None) -> tuple[str, ...]:
        """The text's tokens; a hidden special token is offered as "" (it cannot be clicked)."""
        tokens = text_tokens(loaded, self)
        if self.hide_special:
            flags = special_flags(loaded.tokenizer, encode(loaded, self.text).ids)
            return tuple(t if not f else "" for t, f in zip(tokens, flags, strict=True))
        return tokens

    def label(self, answer: Any, tokens: tuple[str, ...]) -> str | None:
        if type(answer) is not int or answer < 0 or (tokens and answer >= len(tokens)):
            return None
        return f"{answer}: {tokens[answer]}" if tokens else f"token {answer}"
