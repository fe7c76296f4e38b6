"""The one step type: a lesson, a stop on the "Start here" path, a lecture's step and a room's step.

A step opens ``page`` (its name in the page map) with ``settings`` (the values its widgets hold, decoded),
with talking points and, in a lecture, a question. Lessons are one-step lectures without questions, the
"Start here" path is a five-step lecture, and the solo tour and the live room play the same steps. The
settings are JSON-encoded once, where a link is made (``query_params``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from txviz import page_map
from txviz.core.errors import UserError
from txviz.lecture.questions import Question


class StepError(UserError):
    """A step that cannot open its page: an unknown page, a setting the page does not keep, a bad value."""


@dataclass(frozen=True, eq=True)
class Step:
    """Open ``page`` with ``settings``; ``points`` are the lecturer's, ``question`` asks the class."""

    page: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    points: tuple[str, ...] = ()
    question: Question | None = None
    title: str = ""

    def check(self) -> Step:
        """The step itself, once the page map knows its page and the page keeps its settings (StepError)."""
        if self.page not in page_map.BY_NAME:
            raise StepError(f"opens an unknown page {self.page!r}; pages are {', '.join(page_map.BY_NAME)}.")
        refusal = page_map.page(self.page).refusal(self.settings)
        if refusal:
            raise StepError(refusal)
        try:
            self.query_params()
        except (TypeError, ValueError) as error:
            raise StepError(f"a setting is not a plain value ({error}).") from error
        return self

    def query_params(self) -> dict[str, str]:
        """The settings as the page's link parameters (JSON-encoded, as ``links.link_value`` reads them)."""
        return {key: json.dumps(value, allow_nan=False) for key, value in self.settings.items()}

    def url(self) -> str:
        """The relative URL (path and query) that opens the step's page with its settings."""
        query = urlencode(self.query_params())
        return f"{self.page}?{query}" if query else self.page

    def shared(self) -> dict[str, Any]:
        """What a room keeps of the step (its page, settings and title; never the points or question)."""
        return {"page": self.page, "settings": dict(self.settings), "title": self.title}

    @classmethod
    def from_shared(cls, data: Mapping[str, Any]) -> Step:
        """The step a room keeps (``shared``), back as a Step."""
        return cls(
            str(data.get("page", "")), dict(data.get("settings") or {}), title=str(data.get("title", ""))
        )

    @property
    def key(self) -> str:
        """The step as one string (page, settings, title), to tell whether a follower is on it already."""
        return json.dumps(self.shared(), sort_keys=True)


@dataclass(frozen=True)
class Lecture:
    """An ordered list of steps; ``model`` is the default model of its questions."""

    name: str  # the file's stem: the tour's link parameter
    title: str
    source: str
    model: str
    steps: tuple[Step, ...]

    def questions(self) -> list[tuple[int, Question]]:
        """(step index, question) of every step that asks one."""
        return [(i, s.question) for i, s in enumerate(self.steps) if s.question is not None]
