"""The lectures a room can follow (the shipped lecture files), as the steps and questions the room shares."""

from __future__ import annotations

from txviz import page_map
from txviz.app.lecture import tour
from txviz.lecture.questions import Question
from txviz.lecture.steps import Lecture


def lectures() -> dict[str, Lecture]:
    """Every lecture a room can start from, by name (read once for every session)."""
    return tour.lectures()


def page_settings(page: str) -> tuple[str, ...]:
    """The link keys (patterns too) the page of that name keeps (none for a page outside the map)."""
    return page_map.BY_NAME[page].keys if page in page_map.BY_NAME else ()


def question_ref(lecture: Lecture, index: int) -> dict | None:
    """The room's note of a step's question: which one (the question itself is read from the lecture)."""
    question = lecture.steps[index].question
    if question is None:
        return None
    return {
        "id": f"{lecture.name}-{index + 1}",
        "lecture": lecture.name,
        "step": index,
        "prompt": question.prompt,
    }


def question_of(ref: dict | None) -> tuple[Question, str] | None:
    """The question a room's note names, with its lecture's model; None when there is none."""
    if not ref:
        return None
    lecture = lectures().get(ref.get("lecture", ""))
    index = ref.get("step", -1)
    if lecture is None or not 0 <= index < len(lecture.steps) or lecture.steps[index].question is None:
        return None
    return lecture.steps[index].question, lecture.model
