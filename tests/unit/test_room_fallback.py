"""A lecture with Streamlit's internals switched off (TXVIZ_STREAMLIT_PRIVATE=off, the app's fallback when
an upgrade renames one): the lecturer starts a room and moves it, and a follower reaches the new step by
its bar's st.fragment poll alone, with no push, no fragment guard and no warm-up, and no run fails."""

from __future__ import annotations

import asyncio
import json
import time
from urllib.parse import parse_qs, urlencode

from conftest import ARTIFACTS, serve_app
from tiny_apps import run_async

from txviz.app import streamlit_private
from txviz.app.lecture.headless import Session
from txviz.lecture.files import shipped_lectures

LECTURE = shipped_lectures()["1_attention_and_transformers"]  # steps 1 and 2: the toy Self-Attention page
N = len(LECTURE.steps)
LOG = "streamlit-private-off.log"


async def until(ready, timeout: float) -> None:
    """Until ``ready()`` holds (a session's state filled by its messages)."""
    end = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > end:
            raise TimeoutError("never ready")
        await asyncio.sleep(0.05)


async def _lecture(base: str) -> tuple[Session, Session]:
    """The lecturer starts the room and moves it to step 2; returns (lecturer, follower) once the
    follower's bar shows step 2."""
    chosen = urlencode({"room_lecture": json.dumps(LECTURE.title)})
    lecturer = await Session(base, "Lecture_Room", chosen).open()
    follower = None
    try:
        await until(lambda: "Start a room" in lecturer.labels, 180)
        await lecturer.click("Start a room")
        await until(lambda: "room" in parse_qs(lecturer.query) and "Next step" in lecturer.labels, 120)
        code = parse_qs(lecturer.query)["room"][0]
        follower = await Session(base, "Lecture_Room", f"room={code}").open()
        await follower.wait_for(lambda text: f"Step 1 of {N}" in text, timeout=180)  # it followed to step 1
        await lecturer.click("Next step")
        await follower.wait_for(lambda text: f"Step 2 of {N}" in text, timeout=120)
        return lecturer, follower
    finally:
        await lecturer.close()
        if follower is not None:
            await follower.close()


def test_a_follower_reaches_the_lecturers_next_step_by_its_poll_with_the_internals_off(monkeypatch):
    monkeypatch.setenv(streamlit_private.SWITCH, "off")  # the server's environment, from this one's
    monkeypatch.setenv("TXVIZ_ROOM_POLL_S", "1")
    with serve_app(LOG) as base:
        lecturer, follower = run_async(_lecture(base))
    log = (ARTIFACTS / LOG).read_text()
    assert f"{streamlit_private.SWITCH} is off" in log  # the server took the fallback: no push reached it
    assert lecturer.exceptions == [] and follower.exceptions == []
    assert "Traceback" not in log
