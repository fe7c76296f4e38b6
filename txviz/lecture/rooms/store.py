"""The one store the app uses: Redis when TXVIZ_REDIS_URL is set (replicas share it), else memory."""

from __future__ import annotations

import os

from txviz.lecture.rooms.base import RoomStore

REDIS_ENV = "TXVIZ_REDIS_URL"


def open_store(url: str | None = None) -> RoomStore:
    """A Redis store at ``url`` (or $TXVIZ_REDIS_URL); without one, rooms in this process's memory."""
    url = url if url is not None else os.environ.get(REDIS_ENV, "")
    if url:
        from txviz.lecture.rooms.redis_store import RedisStore

        return RedisStore(url)
    from txviz.lecture.rooms.memory import MemoryStore

    return MemoryStore()
