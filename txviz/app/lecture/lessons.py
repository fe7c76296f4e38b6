"""Lesson presets for lecturers: a page, its settings and talking points, from assets/lessons."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from txviz import page_map
from txviz.core import paths

LESSONS = paths.LESSONS


@dataclass(frozen=True)
class Lesson:
    """One preset: open ``page`` (its name in the page map) with ``settings`` and show ``talking_points``
    beside it."""

    name: str
    title: str
    page: str
    settings: dict
    talking_points: tuple[str, ...]

    def query_params(self) -> dict[str, str]:
        """The settings as the page's link parameters (JSON-encoded values)."""
        return {key: json.dumps(value) for key, value in self.settings.items()}


def load_lessons(folder: Path = LESSONS) -> list[Lesson]:
    """Every lesson file, in file-name order; a page or setting the page map does not know is refused
    (ValueError naming the file and the page's settings)."""
    lessons = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        refusal = page_map.page(data["page"]).refusal(data.get("settings", {}))  # UnknownPage lists the names
        if refusal:
            raise ValueError(f"{path.name}: {refusal}")
        lessons.append(
            Lesson(
                path.stem,
                data["title"],
                data["page"],
                data.get("settings", {}),
                tuple(data.get("talking_points", ())),
            )
        )
    return lessons
