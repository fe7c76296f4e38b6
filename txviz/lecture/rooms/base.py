"""What every room store shares: the interface, its errors, and the checks on what users type."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from txviz.core.errors import UserError

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: a code read off a projector is typed right
CODE_LENGTH = 6  # 31**6 = 887 million codes: a guessed code finds no room
MAX_JOINS = 200  # students per room; a burst beyond it gets RoomFull
MAX_NICKNAME = 24  # characters kept of a nickname
IDLE_TTL_S = 4 * 3600  # a room nobody touched for this long is gone (and Redis expires its keys)
FOLLOWING_S = 30.0  # a student polled within this many seconds counts as following (a poll is 10 s)
MAX_ANSWER = 200  # characters kept of a typed answer
# Tries a client gets per window of seconds, shared by every replica (RoomStore.throttle): enough for a
# student who mistypes a code a few times, far too few to guess one of 887 million codes.
JOIN_TRIES = (20, 60.0)  # join codes, per client
KEY_TRIES = (10, 60.0)  # lecturer's keys and resume tickets, per client and per room

FULL = f"This room is full ({MAX_JOINS} students). Ask the lecturer to open a second room."
UNKNOWN = "No room has this code: it may have ended. Check the code on the projector."
CLOSED = "The lecturer closed this room."
NOT_LECTURER = "Only the lecturer's link can change the room."
NOT_SEATED = "You are not seated in this room: join again with the code."
TOO_MANY = "Too many tries: wait a minute, then try again."


class RoomError(UserError):
    """Something about a room the user should read: an unknown code, a full room, a wrong key."""


class UnknownRoom(RoomError):
    """No room has this code (never made, closed, or expired)."""


class RoomClosed(UnknownRoom):
    """The lecturer closed this room (said for IDLE_TTL_S after; then the code is merely unknown)."""


class RoomFull(RoomError):
    """The room has MAX_JOINS students already."""


class NotLecturer(RoomError):
    """The lecturer's key was missing or wrong: only the lecturer drives the room."""


class StoreDown(RoomError):
    """The shared room store (Redis) does not answer."""


class NotSeated(RoomError):
    """An answer from a seat that never joined the room."""


class AnswersClosed(RoomError):
    """An answer to a question that is not the room's open one: revealed, moved on from, or never asked."""


class TooManyTries(RoomError):
    """A client (or a room) tried more often than its limit allows in the current window."""


@dataclass(frozen=True)
class RoomState:
    """What a follower reads on each poll: the step (a page, its settings, a title), the question and
    whether it is revealed; ``version`` grows with every change the lecturer makes."""

    code: str
    title: str
    lecture: str
    index: int
    step: dict
    version: int
    question: dict | None = None
    revealed: bool = False
    total: int = 0  # steps in the lecture; 0 when the lecturer drives ad hoc
    extra: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> RoomState:
        return cls(**json.loads(text))


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_token() -> str:
    return secrets.token_urlsafe(24)


def clean_code(text: Any) -> str:
    """A typed join code as stored: upper case, spaces and dashes dropped; '' when it cannot be one."""
    code = re.sub(r"[\s-]", "", str(text or "")).upper()[: CODE_LENGTH + 4]
    return code if len(code) == CODE_LENGTH and all(c in CODE_ALPHABET for c in code) else ""


def clean_nickname(text: Any) -> str:
    """A nickname as shown: control characters dropped, spaces collapsed, at most MAX_NICKNAME characters.

    It is always drawn as plain text; cleaning keeps the tally readable, escaping is the drawing's job.
    """
    text = str(text or "")[:1000]
    kept = "".join(
        " " if c.isspace() else c for c in text if c.isspace() or unicodedata.category(c)[0] != "C"
    )
    return " ".join(kept.split())[:MAX_NICKNAME]


def clean_answer(answer: Any) -> str:
    """An answer as tallied: its text, trimmed, at most MAX_ANSWER characters."""
    text = answer if isinstance(answer, str) else json.dumps(answer)
    return " ".join(text.split())[:MAX_ANSWER]


def same_token(given: Any, stored: str) -> bool:
    """The lecturer's key matches, compared in constant time."""
    return isinstance(given, str) and hmac.compare_digest(given.encode(), stored.encode())


def ticket_hash(ticket: Any) -> str:
    """What a store keeps of a resume ticket: its SHA-256, so a copy of the store cannot resume a room."""
    return hashlib.sha256(str(ticket).encode()).hexdigest()


def same_ticket(given: Any, stored: str | None) -> bool:
    """A resume ticket matches the stored hash, compared in constant time."""
    return isinstance(given, str) and bool(stored) and hmac.compare_digest(ticket_hash(given), stored)


def open_question(state: RoomState) -> str | None:
    """The id of the question students may answer now: asked and not yet revealed."""
    if state.question is None or state.revealed or "id" not in state.question:
        return None
    return str(state.question["id"])


def answers_closed(state: RoomState | None, question_id: Any) -> AnswersClosed:
    """The refusal of an answer to a question that is not open, saying why."""
    asked = state is not None and state.question is not None and state.question.get("id") is not None
    if asked and str(state.question["id"]) == str(question_id) and state.revealed:
        return AnswersClosed("Answers are closed: the lecturer has revealed this question.")
    return AnswersClosed("Answers are closed: the lecturer has moved on from this question.")


def new_state(code: str, title: str, lecture: str, step: dict, total: int) -> RoomState:
    return RoomState(code=code, title=title, lecture=lecture, index=0, step=step, version=1, total=total)


class RoomStore(ABC):
    """Rooms by join code. One owner (the app's one store object); every call is safe from any thread."""

    @abstractmethod
    def create(
        self, title: str, lecture: str = "", step: dict | None = None, total: int = 0
    ) -> tuple[str, str]:
        """A new room at its first step; returns (join code, the lecturer's secret key)."""

    @abstractmethod
    def state(self, code: str) -> RoomState:
        """The room's state, or UnknownRoom."""

    @abstractmethod
    def check(self, code: str, token: Any) -> None:
        """NotLecturer unless ``token`` is the room's key."""

    @abstractmethod
    def join(self, code: str, nickname: str = "", seat: str = "") -> str:
        """A student's seat (a random id); joining again with one's seat keeps it. RoomFull past MAX_JOINS."""

    @abstractmethod
    def set_step(self, code: str, token: Any, index: int, step: dict) -> RoomState:
        """Move the room to a step; clears the question (a step's question is set after)."""

    @abstractmethod
    def set_question(self, code: str, token: Any, question: dict | None) -> RoomState:
        """Ask a question (a dict with an "id"), or clear it with None."""

    @abstractmethod
    def reveal(self, code: str, token: Any, truth: str = "") -> RoomState:
        """Reveal the current question's answer to the room, with the truth the live model gave."""

    @abstractmethod
    def answer(self, code: str, seat: str, question_id: str, answer: Any) -> str | None:
        """Record a seat's answer to the open question, replacing its earlier one; returns the replaced
        answer (None for a first). NotSeated for a seat that never joined, AnswersClosed unless
        ``question_id`` is the question asked and not yet revealed."""

    @abstractmethod
    def answer_of(self, code: str, question_id: str, seat: str) -> str | None:
        """The answer the room counts for a seat (None when it gave none)."""

    @abstractmethod
    def answers(self, code: str, question_id: str) -> dict[str, str]:
        """Every answer to a question by seat."""

    @abstractmethod
    def nicknames(self, code: str) -> dict[str, str]:
        """Every joined seat's nickname."""

    @abstractmethod
    def seen(self, code: str, seat: str) -> None:
        """A student polled now (the followers count reads it)."""

    @abstractmethod
    def leave(self, code: str, seat: str) -> None:
        """A student left: no longer counted as following (the seat and its answers stay)."""

    @abstractmethod
    def followers(self, code: str) -> int:
        """Students who polled within FOLLOWING_S seconds."""

    @abstractmethod
    def close(self, code: str, token: Any) -> None:
        """End the room: its state is gone, and for IDLE_TTL_S every call on its code raises RoomClosed."""

    @abstractmethod
    def resume_ticket(self, code: str, token: Any) -> str:
        """A new one-time ticket that redeem() turns into the lecturer's key; it replaces any earlier one.

        The store keeps only its hash. NotLecturer unless ``token`` is the room's key."""

    @abstractmethod
    def redeem(self, code: str, ticket: Any) -> str:
        """The room's key for its current resume ticket, which is forgotten in the same step; NotLecturer
        for a wrong, used or replaced ticket."""

    @abstractmethod
    def throttle(self, bucket: str, limit: int, window_s: float, count: bool = True) -> None:
        """Count a try in ``bucket``; TooManyTries once more than ``limit`` fell in the current window.

        With ``count=False`` nothing is counted: TooManyTries when one more try would be too many (a caller
        that counts only failed tries asks first, then counts a failure). The window is fixed: it starts at
        the bucket's first counted try, and the count starts again after it."""

    def announce(self, code: str) -> bool:
        """Tell every server the room changed; False where the store is this process's alone (the caller
        then pushes to its own followers)."""
        return False

    def listen(self, on_change: Callable[[str], object]) -> None:
        """Call ``on_change(code)`` whenever another server announces a change (nothing to hear alone)."""
        return None  # a store in this process's memory: every change is announced here already

    def tally(self, code: str, question_id: str) -> dict[str, int]:
        """How many students gave each answer, most frequent first."""
        counts: dict[str, int] = {}
        for given in self.answers(code, question_id).values():
            counts[given] = counts.get(given, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
