"""Lecture files: load and validate assets/lectures/*.yaml into lectures of steps (txviz/lecture/steps.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from txviz.core import paths
from txviz.core.errors import UserError
from txviz.lecture.questions import question_from
from txviz.lecture.steps import Lecture, Step, StepError

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


def _step(data: Any, where: str) -> Step:
    if not isinstance(data, dict):
        raise LectureError(f"{where} is not a mapping with title, page and settings.")
    unknown = sorted(str(k) for k in data if k not in STEP_FIELDS)
    if unknown:
        raise LectureError(f"{where} has no field {', '.join(unknown)}; a step has {', '.join(STEP_FIELDS)}.")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise LectureError(f"{where} has no title.")
    where = f"{where} ({title!r})"
    page, settings = data.get("page"), data.get("settings") or {}
    if not isinstance(settings, dict):
        raise LectureError(f"{where}: settings must be a mapping of link keys to values.")
    points = data.get("points") or ()
    if isinstance(points, str) or not all(isinstance(p, str) for p in points):
        raise LectureError(f"{where}: points must be a list of sentences.")
    question = None
    if data.get("question") is not None:
        try:
            question = question_from(data["question"])
        except UserError as error:
            raise LectureError(f"{where}: {error}") from error
    try:
        return Step(
            str(page), {str(k): v for k, v in settings.items()}, tuple(points), question, title.strip()
        ).check()
    except StepError as error:
        raise LectureError(
            f"{where} {error}" if str(error).startswith("opens") else f"{where}: {error}"
        ) from error


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
