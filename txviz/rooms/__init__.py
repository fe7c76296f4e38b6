"""Lecture rooms: a lecturer's step, question and tally shared with the students who joined."""

from txviz.rooms.base import (  # noqa: F401 (the package's names)
    MAX_JOINS,
    NotLecturer,
    RoomError,
    RoomFull,
    RoomStore,
    StoreDown,
    UnknownRoom,
    clean_code,
    clean_nickname,
)
from txviz.rooms.store import open_store  # noqa: F401
