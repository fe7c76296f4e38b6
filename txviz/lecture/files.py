"""Lecture files: load and validate assets/lectures/*.yaml, and the URL that opens each step."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml

from txviz import page_map
from txviz.core import paths
from txviz.core.errors import UserError
from txviz.lecture.questions import Question, question_from

LECTURES = paths.LECTURES
LECTURE_FIELDS = ("title", "source", "model", "steps")
STEP_FIELDS = (
    "title",
    "page",
    "settings",
    "points",
    "question",
)  # projector mode's link parameter, which every page reads


class LectureError(UserError):
    """A lecture file that cannot be used: the message names the file and the bad step."""


@dataclass(frozen=True)
class Step:
    """One stop: open ``page`` (its name in the page map) with ``settings`` (link values, JSON-encoded)."""

    title: str
    page: str
    settings: dict[str, str]
    points: tuple[str, ...] = ()
    question: Question | None = None

    def values(self) -> dict[str, Any]:
        """The settings decoded, as the page's widgets hold them."""
        return {key: json.loads(value) for key, value in self.settings.items()}


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


def step_url(step: Step) -> str:
    """The relative URL (path and query) that opens the step's page with its settings."""
    query = urlencode(step.settings)
    return f"{step.page}?{query}" if query else step.page


def _step(data: Any, where: str) -> Step:
    if not isinstance(data, dict):
        raise LectureError(f"{where} is not a mapping with title, page and settings.")
    unknown = sorted(str(k) for k in data if k not in STEP_FIELDS)
    if unknown:
        raise LectureError(f"{where} has no field {', '.join(unknown)}; a step has {', '.join(STEP_FIELDS)}.")
    title, page = data.get("title"), data.get("page")
    if not isinstance(title, str) or not title.strip():
        raise LectureError(f"{where} has no title.")
    where = f"{where} ({title!r})"
    if not isinstance(page, str) or page not in page_map.BY_NAME:
        raise LectureError(
            f"{where} opens an unknown page {page!r}; pages are {', '.join(page_map.BY_NAME)}."
        )
    settings = data.get("settings") or {}
    if not isinstance(settings, dict):
        raise LectureError(f"{where}: settings must be a mapping of link keys to values.")
    refusal = page_map.page(page).refusal(settings)
    if refusal:
        raise LectureError(f"{where}: {refusal}")
    try:
        encoded = {str(k): json.dumps(v, allow_nan=False) for k, v in settings.items()}
    except (TypeError, ValueError) as error:
        raise LectureError(f"{where}: a setting is not a plain value ({error}).") from error
    points = data.get("points") or ()
    if isinstance(points, str) or not all(isinstance(p, str) for p in points):
        raise LectureError(f"{where}: points must be a list of sentences.")
    question = None
    if data.get("question") is not None:
        try:
            question = question_from(data["question"])
        except UserError as error:
            raise LectureError(f"{where}: {error}") from error
    return Step(title.strip(), page, encoded, tuple(points), question)


def load_lecture(path: Path) -> Lecture:
    """A lecture file, validated: a LectureError names the file and the bad step."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise LectureError(f"{path.name} is not valid YAML: {error}") from error
    except (OSError, UnicodeDecodeError) as error:
        raise LectureError(f"{path.name} cannot be read: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data["steps"]:
        raise LectureError(f"{path.name} needs a title and a non-empty list of steps.")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise LectureError(f"{path.name} has no title.")
    unknown = sorted(str(k) for k in data if k not in LECTURE_FIELDS)
    if unknown:
        raise LectureError(
            f"{path.name} has no field {', '.join(unknown)}; a lecture has {', '.join(LECTURE_FIELDS)}."
        )
    steps = tuple(_step(s, f"{path.name}, step {i + 1}") for i, s in enumerate(data["steps"]))
    return Lecture(
        path.stem, title.strip(), str(data.get("source", "")), str(data.get("model", "minilm")), steps
    )


def shipped_lectures(folder: Path = LECTURES) -> dict[str, Lecture]:
    """Every lecture file in the folder, by name, in file-name order."""
    return {path.stem: load_lecture(path) for path in sorted(folder.glob("*.yaml"))}
