"""Rooms in the server's memory: the default for one server, nothing to start."""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from txviz.rooms.base import (
    FOLLOWING_S,
    IDLE_TTL_S,
    MAX_JOINS,
    NotLecturer,
    RoomFull,
    RoomState,
    RoomStore,
    UnknownRoom,
    clean_answer,
    clean_code,
    clean_nickname,
    new_code,
    new_state,
    new_token,
    same_token,
)


@dataclass
class _Room:
    state: RoomState
    token: str
    touched: float
    members: dict[str, str] = field(default_factory=dict)
    answers: dict[str, dict[str, str]] = field(default_factory=dict)
    seen: dict[str, float] = field(default_factory=dict)


class MemoryStore(RoomStore):
    """Every room in one dict behind one lock; a room idle for ``idle_s`` is dropped when next read."""

    def __init__(self, idle_s: float = IDLE_TTL_S, clock=time.monotonic):
        self._rooms: dict[str, _Room] = {}
        self._lock = threading.Lock()
        self._idle_s, self._clock = idle_s, clock

    def _room(self, code: str) -> _Room:
        """The room (the lock held by the caller), or UnknownRoom; an idle room expires here."""
        code = clean_code(code)
        room = self._rooms.get(code)
        if room is not None and self._clock() - room.touched > self._idle_s:
            del self._rooms[code]
            room = None
        if room is None:
            raise UnknownRoom("No room has this code: it may have ended. Check the code on the projector.")
        return room

    def _lecturer(self, code: str, token: Any) -> _Room:
        room = self._room(code)
        if not same_token(token, room.token):
            raise NotLecturer("Only the lecturer's link can change the room.")
        room.touched = self._clock()
        return room

    def _change(self, room: _Room, **changes: Any) -> RoomState:
        room.state = dataclasses.replace(room.state, version=room.state.version + 1, **changes)
        return room.state

    def create(self, title, lecture="", step=None, total=0):
        with self._lock:
            code = new_code()
            while code in self._rooms:
                code = new_code()
            token = new_token()
            self._rooms[code] = _Room(
                new_state(code, title, lecture, step or {}, total), token, self._clock()
            )
            return code, token

    def state(self, code):
        with self._lock:
            return self._room(code).state

    def check(self, code, token):
        with self._lock:
            self._lecturer(code, token)

    def join(self, code, nickname="", seat=""):
        with self._lock:
            room = self._room(code)
            if seat in room.members:
                return seat
            if len(room.members) >= MAX_JOINS:
                raise RoomFull(
                    f"This room is full ({MAX_JOINS} students). Ask the lecturer to open a second room."
                )
            seat = secrets.token_urlsafe(9)
            room.members[seat] = clean_nickname(nickname)
            room.touched = self._clock()
            return seat

    def set_step(self, code, token, index, step):
        with self._lock:
            room = self._lecturer(code, token)
            return self._change(room, index=int(index), step=dict(step), question=None, revealed=False)

    def set_question(self, code, token, question):
        with self._lock:
            room = self._lecturer(code, token)
            return self._change(room, question=question, revealed=False)

    def reveal(self, code, token, truth=""):
        with self._lock:
            room = self._lecturer(code, token)
            question = dict(room.state.question or {}, truth=str(truth))
            return self._change(room, question=question, revealed=True)

    def answer(self, code, seat, question_id, answer):
        with self._lock:
            room = self._room(code)
            if seat not in room.members:
                return False
            given = room.answers.setdefault(str(question_id), {})
            if seat in given:
                return False
            given[seat] = clean_answer(answer)
            return True

    def answers(self, code, question_id):
        with self._lock:
            return dict(self._room(code).answers.get(str(question_id), {}))

    def nicknames(self, code):
        with self._lock:
            return dict(self._room(code).members)

    def seen(self, code, seat):
        with self._lock:
            room = self._room(code)
            if seat in room.members:
                room.seen[seat] = self._clock()

    def followers(self, code):
        with self._lock:
            now = self._clock()
            return sum(now - t <= FOLLOWING_S for t in self._room(code).seen.values())

    def close(self, code, token):
        with self._lock:
            self._lecturer(code, token)
            del self._rooms[clean_code(code)]
