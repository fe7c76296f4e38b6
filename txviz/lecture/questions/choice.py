"""A question no model decides: the student picks one of the file's options, the file names the right one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from txviz.core.errors import UserError
from txviz.lecture.questions.base import OPTION, AnswerForm, Question, Truth, need, register


@register("choice")
@dataclass(frozen=True)
class Choice(Question):
    """``options`` to pick among; ``answer``: the right one (its index or its text), stored in the file."""

    options: tuple[str, ...] = ()
    answer: int | None = None

    asks_model = False
    marker = "star"

    @classmethod
    def check(cls, data: dict) -> None:
        need(data, ("options", "answer"), "choice", "options and the answer")
        options = tuple(str(o) for o in data.get("options") or ())
        if len(options) < 2:
            raise UserError("a choice question needs at least two options.")
        answer = _index(data.get("answer"), options)
        if not isinstance(answer, int) or isinstance(answer, bool) or not 0 <= answer < len(options):
            raise UserError(f"the choice question's answer {answer!r} is not one of its options.")

    @classmethod
    def build(cls, values: dict[str, Any]) -> Question:
        return super().build(values | {"answer": _index(values["answer"], values["options"])})

    @property
    def answer_form(self) -> AnswerForm:
        return AnswerForm(OPTION)

    def truth(self, loaded=None) -> Truth:
        return Truth("choice", self.answer, self.options[self.answer])

    def choices(self, loaded=None) -> tuple[str, ...]:
        return self.options

    def label(self, answer: Any, tokens: tuple[str, ...]) -> str | None:
        ok = type(answer) is int and 0 <= answer < len(self.options)
        return self.options[answer] if ok else None

    def bins(self) -> list[str]:
        """Every option, in the file's order."""
        return list(self.options)


def _index(answer: Any, options: tuple[str, ...]) -> Any:
    """An answer given as an option's text, as its index (anything else as given)."""
    return options.index(answer) if isinstance(answer, str) and answer in options else answer
