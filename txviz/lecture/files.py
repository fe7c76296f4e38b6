"""Lecture files: load and validate assets/lectures/*.yaml, and the URL that opens each step."""

from __future__ import annotations

import ast
import functools
import json
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml

from txviz.core import paths
from txviz.core.errors import UserError
from txviz.lecture.questions import Question, question_from

LECTURES = paths.LECTURES
ALWAYS_KNOWN = ("present",)  # projector mode's link parameter, which every page reads


class LectureError(UserError):
    """A lecture file that cannot be used: the message names the file and the bad step."""


@dataclass(frozen=True)
class Step:
    """One stop: open ``page`` (a page script's stem) with ``settings`` (link values, JSON-encoded)."""

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


@functools.cache
def page_keys() -> dict[str, tuple[str, ...]]:
    """Each page's stem -> the link keys (fnmatch patterns too) its ``setup_page(share=...)`` names."""
    found = {}
    for script in sorted(paths.PAGES.glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "setup_page":
                share = next((k.value for k in node.keywords if k.arg == "share"), None)
                names = share.elts if isinstance(share, ast.Tuple) else []
                found[script.stem] = tuple(e.value for e in names if isinstance(e, ast.Constant))
    return found


def known_key(page: str, key: str) -> bool:
    """A key the page restores from its link (a plain name or one of its patterns)."""
    return key in ALWAYS_KNOWN or any(fnmatchcase(key, p) for p in page_keys().get(page, ()))


def url_name(page: str) -> str:
    """2_Attention_Explorer -> Attention_Explorer, the page's URL."""
    return page.split("_", 1)[1]


def step_url(step: Step) -> str:
    """The relative URL (path and query) that opens the step's page with its settings."""
    query = urlencode(step.settings)
    return f"{url_name(step.page)}?{query}" if query else url_name(step.page)


def _step(data: Any, where: str) -> Step:
    if not isinstance(data, dict):
        raise LectureError(f"{where} is not a mapping with title, page and settings.")
    title, page = data.get("title"), data.get("page")
    if not isinstance(title, str) or not title.strip():
        raise LectureError(f"{where} has no title.")
    where = f"{where} ({title!r})"
    pages = page_keys()
    if page not in pages:
        raise LectureError(f"{where} opens an unknown page {page!r}; pages are {', '.join(pages)}.")
    settings = data.get("settings") or {}
    if not isinstance(settings, dict):
        raise LectureError(f"{where}: settings must be a mapping of link keys to values.")
    unknown = [str(k) for k in settings if not known_key(page, str(k))]
    if unknown:
        raise LectureError(
            f"{where}: {page} keeps no setting {', '.join(unknown)} in its link; "
            f"it keeps {', '.join(pages[page])}."
        )
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
    steps = tuple(_step(s, f"{path.name}, step {i + 1}") for i, s in enumerate(data["steps"]))
    return Lecture(
        path.stem, title.strip(), str(data.get("source", "")), str(data.get("model", "minilm")), steps
    )


def shipped_lectures(folder: Path = LECTURES) -> dict[str, Lecture]:
    """Every lecture file in the folder, by name, in file-name order."""
    return {path.stem: load_lecture(path) for path in sorted(folder.glob("*.yaml"))}
