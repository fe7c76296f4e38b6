"""Push: the registry of this server's followers, a push reaching a live session's fragment without its
timer, the Redis channel between replicas, and what a push does when Streamlit's internals fail or are off
(tests/unit/test_streamlit_private.py checks they are there)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time

import pytest
from tiny_apps import run_async, served

from txviz.app import streamlit_private
from txviz.app.lecture import push
from txviz.app.lecture.headless import Session
from txviz.lecture.rooms import open_store
from txviz.lecture.rooms.redis_server import installed, redis_server

RUNNING_FRAGMENT = push.running_fragment


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    monkeypatch.setattr(push, "_ROOMS", {})
    monkeypatch.setattr(push, "_LISTENING", set())
    monkeypatch.delenv(streamlit_private.SWITCH, raising=False)
    monkeypatch.setattr(streamlit_private, "_STATE", {})  # each test's own verdict


def _in_fragment(monkeypatch, session_id: str, fragment_id: str | None = "f1"):
    here = (session_id, push.Seat(fragment_id, "p", "room=ABC")) if fragment_id else None
    monkeypatch.setattr(push, "running_fragment", lambda: here)
    monkeypatch.setattr(push, "this_session", lambda: session_id)


def test_a_follower_registers_from_its_fragment_and_unregisters_when_it_leaves(monkeypatch):
    _in_fragment(monkeypatch, "s1")
    assert push.follow("ABC")
    _in_fragment(monkeypatch, "s2")
    assert push.follow("ABC")
    assert push.following("ABC") == {
        "s1": push.Seat("f1", "p", "room=ABC"),
        "s2": push.Seat("f1", "p", "room=ABC"),
    }
    push.unfollow("ABC")  # s2, the session running now
    assert list(push.following("ABC")) == ["s1"]
    push.unfollow("ABC", "s1")
    assert push.following("ABC") == {} and push._ROOMS == {}


def test_outside_a_fragment_nothing_registers(monkeypatch):
    _in_fragment(monkeypatch, "s1", fragment_id=None)
    assert not push.follow("ABC")
    monkeypatch.setattr(push, "running_fragment", RUNNING_FRAGMENT)
    assert push.running_fragment() is None  # no session in this thread
    assert not push.follow("ABC")
    assert push.following("ABC") == {}


def test_a_push_asks_every_follower_and_forgets_the_sessions_gone(monkeypatch):
    for session in ("s1", "s2", "s3"):
        _in_fragment(monkeypatch, session)
        push.follow("ABC")
    asked = []
    answers = {"s1": True, "s2": False, "s3": None}  # s2's session is gone; s3 cannot be asked here

    def rerun(session_id, seat):
        asked.append(session_id)
        return answers[session_id]

    monkeypatch.setattr(push, "rerun_fragment", rerun)
    assert push.push_here("ABC") == 1
    assert sorted(asked) == ["s1", "s2", "s3"]
    assert sorted(push.following("ABC")) == ["s1", "s3"]


def test_without_a_running_server_a_push_does_nothing():
    assert push.rerun_fragment("no-such-session", push.Seat("f", "p", "")) is None


def test_a_memory_store_pushes_here_and_a_redis_store_that_fails_too(monkeypatch):
    pushed = []
    monkeypatch.setattr(push, "push_here", pushed.append)
    push.announce("ABC", open_store(""))
    from txviz.lecture.rooms.redis_server import free_port
    from txviz.lecture.rooms.redis_store import RedisStore

    push.announce("DEF", RedisStore(f"redis://127.0.0.1:{free_port()}/0"))  # nobody answers
    assert pushed == ["ABC", "DEF"]


def test_a_change_published_on_redis_reaches_every_replicas_subscriber(monkeypatch):
    if not installed():
        pytest.skip("redis-server is missing: apt-get install -y redis-server (make redis)")
    heard: dict[str, list[str]] = {"a": [], "b": []}
    with redis_server() as server:
        replica_a, replica_b = open_store(server.url), open_store(server.url)
        threads = [replica_a.listen(heard["a"].append), replica_b.listen(heard["b"].append)]
        try:
            time.sleep(0.3)  # the subscriptions are in place
            monkeypatch.setattr(push, "push_here", lambda code: pytest.fail("published, so not pushed here"))
            push.announce("ABC", replica_a)
            end = time.monotonic() + 5
            while time.monotonic() < end and not (heard["a"] and heard["b"]):
                time.sleep(0.05)
        finally:
            for thread in threads:
                thread.stop()
    assert heard == {"a": ["ABC"], "b": ["ABC"]}


def test_a_push_that_raises_is_logged_once_with_the_room_and_the_others_still_pushed(monkeypatch, caplog):
    for session in ("s1", "s2", "s3"):
        _in_fragment(monkeypatch, session)
        push.follow("ABC")

    def rerun(session_id, seat):
        if session_id != "s2":
            raise RuntimeError("Event loop is closed")
        return True

    monkeypatch.setattr(push, "rerun_fragment", rerun)
    with caplog.at_level(logging.WARNING, logger=push.__name__):
        assert push.push_here("ABC") == 1
    (record,) = caplog.records
    assert "Room ABC" in record.getMessage() and "2 of its pushes failed" in record.getMessage()
    assert record.exc_info and "s1" not in record.getMessage()  # the exception, never a session's id


def test_a_store_that_cannot_publish_or_listen_is_logged(monkeypatch, caplog):
    class Down:
        def announce(self, code):
            raise ConnectionError("redis down")

        def listen(self, handler):
            raise ConnectionError("redis down")

    pushed = []
    monkeypatch.setattr(push, "push_here", pushed.append)
    with caplog.at_level(logging.WARNING, logger=push.__name__):
        push.announce("ABC", Down())
        push.listen(Down())
    assert pushed == ["ABC"]  # this server's followers still hear of it
    publish, listen = caplog.records
    assert "Room ABC" in publish.getMessage() and publish.exc_info
    assert "Listening" in listen.getMessage() and listen.exc_info
    assert not push._LISTENING  # the next follower tries again


def test_with_the_adapter_off_nothing_registers_and_nothing_is_pushed(monkeypatch):
    monkeypatch.setenv(streamlit_private.SWITCH, "off")
    assert push.running_fragment() is None and push.this_session() is None
    assert not push.follow("ABC")
    assert push.rerun_fragment("s1", push.Seat("f", "p", "")) is None


def test_redis_still_lets_a_subscriber_thread_report_its_failures():
    from redis.client import PubSub

    assert "exception_handler" in inspect.signature(PubSub.run_in_thread).parameters


TINY = """
import pathlib
import threading
import streamlit as st
from txviz.app.lecture import push

STEP = pathlib.Path(__file__).with_name("step.txt")
st.markdown("a tiny page")


@st.fragment(run_every=600)  # its timer never fires within the test
def bar():
    st.markdown(f"Step {STEP.read_text().strip()}")
    push.follow("TINY")


bar()
if st.button("Move"):
    STEP.write_text(str(int(STEP.read_text()) + 1))
    threading.Thread(target=push.push_here, args=("TINY",)).start()  # from another thread, as Redis's
"""


@pytest.fixture(scope="module")
def tiny_app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_push")
    (folder / "step.txt").write_text("1")
    with served(folder, TINY) as base:
        yield base


def test_a_push_from_another_thread_reruns_a_followers_fragment_without_its_timer(tiny_app):
    async def watch() -> None:
        follower = await Session(tiny_app, "tiny").open()
        mover = await Session(tiny_app, "tiny").open()
        try:
            await follower.wait_for(lambda text: text == "Step 1", timeout=60)
            await mover.wait_for(lambda text: text == "Step 1", timeout=60)
            await mover.finished(60)  # its button is known
            await asyncio.sleep(0.3)  # the follower's run has finished: only a push can bring Step 2 now
            runs = follower.runs_done
            await mover.click("Move")
            await follower.wait_for(lambda text: text == "Step 2", timeout=10)
            assert follower.runs_done == runs  # a fragment rerun, not the page's
        finally:
            await follower.close()
            await mover.close()

    run_async(watch())


def test_a_push_reruns_with_the_widgets_last_values_and_no_click_again(monkeypatch):
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime import Runtime

    last = ClientState(fragment_id="old", page_script_hash="p")
    last.widget_states.widgets.add(id="answer", string_value="Paris")  # the student's choice
    last.widget_states.widgets.add(id="lock", trigger_value=True)  # the click that sent it
    asked = []

    class Session:
        _client_state = last

        def request_rerun(self, state):
            asked.append(state)

        def _call_soon_on_event_loop(self, callback):
            callback()

    class Live:
        def get_app_session(self, session_id):
            return Session() if session_id == "s1" else None

    monkeypatch.setattr(Runtime, "exists", staticmethod(lambda: True))
    monkeypatch.setattr(Runtime, "instance", staticmethod(lambda: Live()))
    assert push.rerun_fragment("s1", push.Seat("bar", "p", "room=ABC")) is True
    assert push.rerun_fragment("gone", push.Seat("bar", "p", "room=ABC")) is False
    (state,) = asked
    assert state.fragment_id == "bar" and state.query_string == "room=ABC"
    assert {w.id: w.WhichOneof("value") for w in state.widget_states.widgets} == {"answer": "string_value"}
