"""The lectures a room can follow, as steps the room shares: a page, its settings, a title."""

from __future__ import annotations

from dataclasses import dataclass, field

from txviz.app.lessons import load_lessons


@dataclass(frozen=True)
class Step:
    """One step: open ``page`` with ``settings``; the talking points stay on the lecturer's screen."""

    page: str
    settings: dict
    title: str
    talking_points: tuple[str, ...] = ()
    question: dict | None = None

    def shared(self) -> dict:
        """What the room store keeps of the step (never its talking points)."""
        return {"page": self.page, "settings": self.settings, "title": self.title}


@dataclass(frozen=True)
class RoomLecture:
    name: str
    title: str
    steps: tuple[Step, ...] = field(default_factory=tuple)


def lectures() -> dict[str, RoomLecture]:
    """Every lecture a room can start from, by name: the lessons, one step each, as one lecture."""
    steps = tuple(Step(s.page, s.settings, s.title, s.talking_points) for s in load_lessons())
    return {"lessons": RoomLecture("lessons", "The five lessons", steps)}


def truth_of(question: dict) -> str:
    """The question's true answer as the room tallies it (a concept question's own answer)."""
    return str(question.get("answer", ""))
