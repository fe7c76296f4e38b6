"""A lecture under a class's faults, on a live server with rooms in Redis and headless sessions (each a
real session of the server, as a browser's is): thirty students reload at once, a late joiner arrives,
the lecturer closes the room while the class is answering, and a mischievous student replays links.

What is checked is in the store (seats, answers, the step) and on every session's screen (the step it
shows, no exception), never a duration.
"""

from __future__ import annotations

import asyncio
import json
import re
from urllib.parse import parse_qs, urlencode

import pytest
from conftest import ARTIFACTS, serve_app
from tiny_apps import run_async

from txviz.app.lecture.headless import Session
from txviz.lecture.files import shipped_lectures
from txviz.lecture.rooms.base import RoomClosed
from txviz.lecture.rooms.redis_server import installed, redis_server
from txviz.lecture.rooms.store import open_store

pytestmark = pytest.mark.skipif(not installed(), reason="redis-server is missing: make redis")

LECTURE = shipped_lectures()["1_attention_and_transformers"]  # step 1 asks a choice; step 2 asks nothing
N = len(LECTURE.steps)
CLASS = 30
LOG = "room-faults.log"
COOKIE = re.compile(r"(txviz_(?:seat|key)_[A-Z0-9]+)=([A-Za-z0-9_-]+);")


def kept(session: Session) -> dict[str, str]:
    """The cookies the app asked this session's browser to keep (as a browser would run its script)."""
    found = {}
    for body in session.html:
        found.update(COOKIE.findall(body))
    return found


def cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in cookies.items())


async def until(ready, timeout: float = 180) -> None:
    end = asyncio.get_running_loop().time() + timeout
    while not ready():
        if asyncio.get_running_loop().time() > end:
            raise TimeoutError("never ready")
        await asyncio.sleep(0.05)


async def student(base: str, code: str, cookie: str = "") -> Session:
    """A student's browser opening the join link (with its cookies), at the lecturer's step."""
    session = await Session(base, "Lecture_Room", f"room={code}", cookie).open()
    await session.wait_for(lambda text: "Following the lecturer" in text, timeout=300)
    return session


def closed(store, code: str) -> bool:
    """The store says the lecturer closed the room."""
    try:
        store.state(code)
    except RoomClosed:
        return True
    return False


def on_step(session: Session, k: int) -> bool:
    return any(f"Step {k} of {N}" in text for text in session.texts)


async def _class(base: str, url: str) -> None:
    store = open_store(url)
    chosen = urlencode({"room_lecture": json.dumps(LECTURE.title)})
    lecturer = await Session(base, "Lecture_Room", chosen).open()
    sessions = [lecturer]
    try:
        await until(lambda: "Start a room" in lecturer.labels)
        await lecturer.click("Start a room")
        await until(lambda: "room" in parse_qs(lecturer.query) and "Next step" in lecturer.labels)
        code = parse_qs(lecturer.query)["room"][0]
        key = kept(lecturer)[f"txviz_key_{code}"]
        assert key not in lecturer.query

        gate = asyncio.Semaphore(6)  # a class walks in a few at a time

        async def walk_in(cookie: str = "") -> Session:
            async with gate:
                return await student(base, code, cookie)

        students = await asyncio.gather(*(walk_in() for _ in range(CLASS)))
        sessions += students
        seats = {kept(s)[f"txviz_seat_{code}"] for s in students}
        assert len(seats) == CLASS == len(store.nicknames(code))
        await lecturer.click("Next step")
        for s in students:
            await until(lambda s=s: on_step(s, 2))

        # the whole class reloads at once: every browser comes back with its cookie, to its own seat
        cookies = [cookie_header(kept(s)) for s in students]
        await asyncio.gather(*(s.close() for s in students))
        students = await asyncio.gather(*(student(base, code, c) for c in cookies))
        sessions += students
        for s in students:
            await until(lambda s=s: on_step(s, 2))
        assert set(store.nicknames(code)) == seats  # not one new seat

        late = await student(base, code)  # a late joiner lands on the current step
        sessions.append(late)
        await until(lambda: on_step(late, 2))
        assert len(store.nicknames(code)) == CLASS + 1

        # a mischievous student: the presenter's address, the key in a link, a replayed seat of another
        for query in (f"room={code}", f"room={code}&key={key}", f"room={code}&seat={next(iter(seats))}"):
            other = await Session(base, "Lecture_Room", query).open()
            sessions.append(other)
            await other.wait_for(lambda text: "Following the lecturer" in text, timeout=300)
            assert "Next step" not in other.labels and "Close the room" not in other.labels
        assert store.state(code).index == 1 and len(store.nicknames(code)) == CLASS + 4

        # back to the question; the lecturer closes the room while the class is answering
        await lecturer.click("Previous")
        for s in students:
            await until(lambda s=s: on_step(s, 1) and "Your answer" in s.labels)

        async def answer(i: int, s: Session) -> None:
            fragment, options = s.fragment_of["Your answer"], s.options["Your answer"]
            await s.choose("Your answer", options[i % len(options)], fragment)
            await s.finished()
            await s.click("Lock in my answer", fragment)

        answering = [asyncio.ensure_future(answer(i, s)) for i, s in enumerate(students)]
        await asyncio.sleep(0.5)
        await lecturer.click("Close the room")  # asked: the lecturer's run closes it soon after
        await asyncio.gather(*answering, return_exceptions=True)
        await until(lambda: closed(store, code))
        for s in students:
            await s.wait_for(lambda text: "closed this room" in text, timeout=120)
        for s in sessions:
            assert s.exceptions == []
            assert s.places.stopped is None  # a browser would have placed every element
    finally:
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


def test_a_class_reloads_at_once_joins_late_replays_links_and_answers_while_the_room_closes(monkeypatch):
    with redis_server() as redis:
        monkeypatch.setenv("TXVIZ_REDIS_URL", redis.url)  # the server's environment, from this one's
        with serve_app(LOG) as base:
            run_async(_class(base, redis.url))
    assert "Traceback" not in (ARTIFACTS / LOG).read_text()
