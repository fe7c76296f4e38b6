"""Lecture rooms: a lecturer's step, question and tally shared with the students who joined."""

from txviz.lecture.rooms.base import (  # noqa: F401 (the package's names)
    JOIN_TRIES,
    KEY_TRIES,
    MAX_JOINS,
    AnswersClosed,
    NotLecturer,
    NotSeated,
    RoomClosed,
    RoomError,
    RoomFull,
    RoomStore,
    StoreDown,
    TooManyTries,
    UnknownRoom,
    clean_code,
    clean_nickname,
)
from txviz.lecture.rooms.store import open_store  # noqa: F401
