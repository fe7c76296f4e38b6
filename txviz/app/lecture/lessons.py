"""Lessons for lecturers: lectures of one step and no question (a page, its settings and talking points),
from assets/lessons."""

from __future__ import annotations

import json
from pathlib import Path

from txviz.core import paths
from txviz.lecture.steps import Lecture, Step, StepError

LESSONS = paths.LESSONS


def load_lessons(folder: Path = LESSONS) -> list[Lecture]:
    """Every lesson file as a one-step lecture, in file-name order; a page or setting the page map does not
    know is refused (ValueError naming the file and the page's settings)."""
    lessons = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        points = tuple(data.get("talking_points", ()))
        try:
            step = Step(data["page"], data.get("settings", {}), points, title=data["title"]).check()
        except StepError as error:
            raise ValueError(f"{path.name}: {error}") from error
        lessons.append(Lecture(path.stem, data["title"], "", "", (step,)))
    return lessons
