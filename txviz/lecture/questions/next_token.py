"""The model's likeliest next token after a text: the student picks one of four or types another."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from txviz.core.candidates import top_candidates
from txviz.lecture.questions.base import (
    N_CANDIDATES,
    TYPED_TOKEN,
    AnswerForm,
    Question,
    Truth,
    need,
    next_distribution,
    register,
    same_token,
)


@register("next_token")
@dataclass(frozen=True)
class NextToken(Question):
    """The likeliest token after ``text``; ``options``: the four offered (else the model's likeliest)."""

    options: tuple[str, ...] = ()

    choices_need_model = True
    marker = "diamond"

    @classmethod
    def check(cls, data: dict) -> None:
        need(data, ("text",), "next_token", "the text whose next token is asked")

    @property
    def answer_form(self) -> AnswerForm:
        return AnswerForm(TYPED_TOKEN)

    def truth(self, loaded=None) -> Truth:
        probs = next_distribution(loaded, self.text)
        candidates = top_candidates(loaded.tokenizer, probs, N_CANDIDATES)
        return Truth("next_token", candidates.tokens[0], candidates.tokens[0], candidates=candidates)

    def choices(self, loaded=None) -> tuple[str, ...]:
        """The file's four, else the model's likeliest four in alphabetical order (their order tells nothing)."""
        if self.options:
            return self.options
        probs = next_distribution(loaded, self.text)
        return tuple(sorted(top_candidates(loaded.tokenizer, probs, N_CANDIDATES).tokens, key=str.lower))

    def is_right(self, answer: Any, truth: Truth) -> bool:
        return same_token(answer, truth.value)

    def label(self, answer: Any, tokens: tuple[str, ...]) -> str | None:
        return str(answer).strip().lower() or None if isinstance(answer, str) else None
