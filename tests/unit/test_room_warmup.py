"""A room's warm-up opens a step's page headlessly on the server: its cached work is done then, so a
session arriving later with the same settings runs none (counted per call as the lecture benchmark's
counting server counts forward passes)."""

from __future__ import annotations

import os
import sys

import pytest
from tiny_apps import run_async

from txviz.app import warmup
from txviz.app.headless import Session
from txviz.bench.load import ROOT, free_port, launch, server_env, stop_server
from txviz.rooms.base import FOLLOWING_S

PAGE = """
import json
import pathlib

import streamlit as st

from txviz.app.caching import shared_resource

COUNT = pathlib.Path(__file__).with_name("forwards.txt")


@shared_resource()
def work(n: int) -> int:
    with open(COUNT, "a") as out:
        out.write("run\\n")
    return n * n


n = json.loads(st.query_params.get("n", "1"))
st.markdown(f"square {work(n)}")
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm")
    (folder / "warmpage.py").write_text(PAGE)
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(folder / "warmpage.py"), "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true",
               "--browser.gatherUsageStats", "false"]  # fmt: skip
    env = server_env() | {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    server = launch(command, port, folder / "server.log", env)
    yield f"http://127.0.0.1:{port}", folder / "forwards.txt"
    stop_server(server)


def runs(count) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def visit(base: str, n: int) -> None:

    async def go() -> None:
        session = await Session(base, "warmpage", f"n={n}").open()
        try:
            await session.wait_for(lambda text: text.startswith("square"), timeout=60)
        finally:
            await session.close()

    run_async(go())


def test_a_warmed_step_costs_the_next_session_no_work(app):
    base, count = app
    step = {"page": "warmpage.py", "settings": {"n": 7}, "title": "a step"}
    thread = warmup.warm([step], base=base)
    assert thread is not None
    thread.join(120)
    assert runs(count) == 1  # the warm-up did the page's work
    visit(base, 7)
    assert runs(count) == 1  # the class arrives: nothing runs again
    visit(base, 8)
    assert runs(count) == 2  # other settings are other work: the counter counts
    assert warmup.warm([step], base=base) is None  # warmed already: not again


def test_the_step_query_is_what_a_followers_page_switch_sends():
    assert warmup.step_query({"page": "p.py", "settings": {"view": "One head, by hand", "scaled": True}}) == (
        "view=%22One+head%2C+by+hand%22&scaled=true"
    )


def test_a_follower_writes_seen_at_most_every_few_seconds(monkeypatch):
    from txviz.app import room

    written, clock = [], [100.0]

    class Store:
        def seen(self, code, seat):
            written.append((code, seat, clock[0]))

    monkeypatch.setattr(room, "store", Store)
    monkeypatch.setattr(room.st, "session_state", {})
    monkeypatch.setattr(room.time, "monotonic", lambda: clock[0])
    for _ in range(int(room.SEEN_S / 0.5) * 2):  # polls every 0.5 s for twice SEEN_S
        room.mark_seen("ABCDEF", "seat")
        clock[0] += 0.5
    assert [t for *_, t in written] == [100.0, 100.0 + room.SEEN_S]  # two writes, SEEN_S apart
    assert room.SEEN_S < FOLLOWING_S / 2  # a follower never drops out of the count between writes
