"""Rooms in the server's memory: the default for one server, nothing to start."""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from txviz.lecture.rooms.base import (
    CLOSED,
    FOLLOWING_S,
    FULL,
    IDLE_TTL_S,
    MAX_JOINS,
    NOT_LECTURER,
    NOT_SEATED,
    TOO_MANY,
    UNKNOWN,
    NotLecturer,
    NotSeated,
    RoomClosed,
    RoomFull,
    RoomState,
    RoomStore,
    TooManyTries,
    UnknownRoom,
    answers_closed,
    clean_answer,
    clean_code,
    clean_nickname,
    new_code,
    new_state,
    new_token,
    open_question,
    same_ticket,
    same_token,
    ticket_hash,
)

SWEEP_AT = 1024  # rate-limit buckets kept before the ended windows are swept out


@dataclass
class _Room:
    state: RoomState
    token: str
    touched: float
    members: dict[str, str] = field(default_factory=dict)
    answers: dict[str, dict[str, str]] = field(default_factory=dict)
    seen: dict[str, float] = field(default_factory=dict)
    ticket: str = ""  # the SHA-256 of the lecturer's one resume ticket, '' when none is out


class MemoryStore(RoomStore):
    """Every room in one dict behind one lock; a room idle for ``idle_s`` is dropped when next read."""

    def __init__(self, idle_s: float = IDLE_TTL_S, clock=time.monotonic):
        self._rooms: dict[str, _Room] = {}
        self._closed: dict[str, float] = {}  # code -> when the lecturer closed it
        self._tries: dict[str, tuple[float, int]] = {}  # bucket -> (its window's end, tries in it)
        self._sweep_at = SWEEP_AT
        self._lock = threading.Lock()
        self._idle_s, self._clock = idle_s, clock

    def _room(self, code: str) -> _Room:
        """The room (the lock held by the caller), or RoomClosed / UnknownRoom; an idle room expires here."""
        code = clean_code(code)
        room = self._rooms.get(code)
        if room is not None and self._clock() - room.touched > self._idle_s:
            del self._rooms[code]
            room = None
        if room is None:
            if self._clock() - self._closed.get(code, -float("inf")) <= self._idle_s:
                raise RoomClosed(CLOSED)
            raise UnknownRoom(UNKNOWN)
        return room

    def _lecturer(self, code: str, token: Any) -> _Room:
        room = self._room(code)
        if not same_token(token, room.token):
            raise NotLecturer(NOT_LECTURER)
        room.touched = self._clock()
        return room

    def _change(self, room: _Room, **changes: Any) -> RoomState:
        room.state = dataclasses.replace(room.state, version=room.state.version + 1, **changes)
        return room.state

    def create(self, title, lecture="", step=None, total=0):
        with self._lock:
            code = new_code()
            while code in self._rooms or code in self._closed:  # a closed code says so until it expires
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
                raise RoomFull(FULL)
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
                raise NotSeated(NOT_SEATED)
            if str(question_id) != open_question(room.state):
                raise answers_closed(room.state, question_id)
            given = room.answers.setdefault(str(question_id), {})
            replaced = given.get(seat)
            given[seat] = clean_answer(answer)
            return replaced

    def answer_of(self, code, question_id, seat):
        with self._lock:
            return self._room(code).answers.get(str(question_id), {}).get(seat)

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

    def leave(self, code, seat):
        with self._lock:
            self._room(code).seen.pop(seat, None)

    def followers(self, code):
        with self._lock:
            now = self._clock()
            return sum(now - t <= FOLLOWING_S for t in self._room(code).seen.values())

    def close(self, code, token):
        with self._lock:
            self._lecturer(code, token)
            now = self._clock()
            del self._rooms[clean_code(code)]
            self._closed = {c: t for c, t in self._closed.items() if now - t <= self._idle_s}
            self._closed[clean_code(code)] = now

    def resume_ticket(self, code, token):
        with self._lock:
            room = self._lecturer(code, token)
            ticket = secrets.token_urlsafe(24)
            room.ticket = ticket_hash(ticket)
            return ticket

    def redeem(self, code, ticket):
        with self._lock:
            room = self._room(code)
            if not same_ticket(ticket, room.ticket):
                raise NotLecturer(NOT_LECTURER)
            room.ticket = ""
            room.touched = self._clock()
            return room.token

    def throttle(self, bucket, limit, window_s, count=True):
        with self._lock:
            now = self._clock()
            if len(self._tries) >= self._sweep_at:  # ended windows go, so the dict cannot grow without bound
                self._tries = {b: kept for b, kept in self._tries.items() if kept[0] > now}
                self._sweep_at = max(SWEEP_AT, 2 * len(self._tries))
            ends, tries = self._tries.get(bucket, (now, 0))
            if ends <= now:
                ends, tries = now + window_s, 0
            if count:
                self._tries[bucket] = (ends, tries + 1)
            if tries + 1 > limit:
                raise TooManyTries(TOO_MANY)
