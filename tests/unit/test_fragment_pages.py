"""A fragment rerun asked for with a page the session has left runs on the page it is on: the rule, and a
live server where a stale request (a timer that fired during a page switch) would otherwise tell the
browser to empty its page."""

from __future__ import annotations

import asyncio
import logging

import pytest
import streamlit.runtime.scriptrunner as scriptrunner
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.forward_msg_queue import ForwardMsgQueue
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
from tiny_apps import run_async, served

from txviz.app import fragment_pages, streamlit_private
from txviz.app.lecture.headless import Session


def test_a_fragment_rerun_for_a_page_left_moves_to_the_current_page():
    stale = RerunData(query_string="room=A", page_script_hash="old", fragment_id_queue=["f"], page_name="x")
    moved = fragment_pages.on_current_page(stale, "new", "seat=1")
    assert (moved.page_script_hash, moved.page_name, moved.query_string) == ("new", "", "seat=1")
    assert moved.fragment_id_queue == ["f"]


def test_full_runs_and_fragments_on_their_own_page_are_left_alone():
    page_switch = RerunData(page_script_hash="other")  # a full run may change the page
    here = RerunData(page_script_hash="new", fragment_id_queue=["f"])
    first = RerunData(page_script_hash="old", fragment_id_queue=["f"])
    assert fragment_pages.on_current_page(page_switch, "new", "") is page_switch
    assert fragment_pages.on_current_page(here, "new", "") is here
    assert fragment_pages.on_current_page(first, "", "") is first  # no run yet: nothing to compare


@pytest.fixture
def unwrapped(monkeypatch):
    """ScriptRunner and the message queue as Streamlit ships them (put back after the test), and the
    adapter's verdict made afresh."""
    original = ScriptRunner._run_script
    while hasattr(original, "__wrapped__"):
        original = original.__wrapped__
    monkeypatch.setattr(ScriptRunner, "_run_script", original)
    clear = ForwardMsgQueue.clear
    while hasattr(clear, "__wrapped__"):
        clear = clear.__wrapped__
    monkeypatch.setattr(ForwardMsgQueue, "clear", clear)
    monkeypatch.delenv(streamlit_private.SWITCH, raising=False)
    monkeypatch.setattr(streamlit_private, "_STATE", {})
    return original


def test_install_wraps_streamlits_run_once(unwrapped):
    assert fragment_pages.install() and fragment_pages.install()
    assert getattr(ScriptRunner._run_script, streamlit_private._WRAPPED)
    assert ScriptRunner._run_script.__wrapped__ is unwrapped  # once: not a wrapper of a wrapper


def test_with_the_adapter_off_nothing_is_wrapped(unwrapped, monkeypatch):
    monkeypatch.setenv(streamlit_private.SWITCH, "off")
    clear = ForwardMsgQueue.clear
    assert not fragment_pages.install()
    assert ScriptRunner._run_script is unwrapped and ForwardMsgQueue.clear is clear


BAR = "bar0"  # the follower's bar: a fragment, second on the page


def _message(kind: str, path=(), fragment: str = "", fragments=()) -> ForwardMsg:
    message = ForwardMsg()
    if kind == "new_session":
        message.new_session.page_script_hash = "page"
        message.metadata.run.fragment_ids.extend(fragments)
    elif kind == "script_finished":
        message.script_finished = ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY
    else:
        message.delta.new_element.markdown.body = kind
        message.delta.fragment_id = fragment
        message.metadata.delta_path.extend(path)
    return message


def _full_run_then_bar_rerun() -> list[ForwardMsg]:
    """What a busy server sends after a follower's page switch: the new page's run, not yet flushed when a
    push reruns the bar (Streamlit clears the queue as that rerun starts), then the bar's rerun."""
    queue = ForwardMsgQueue()
    for message in (_message("new_session"), _message("title", [0, 0]), _message("bar", [0, 1], BAR),
                    _message("figure", [0, 2]), _message("script_finished")):  # fmt: skip
        queue.enqueue(message)
    queue.clear(retain_lifecycle_msgs=True, fragment_ids_this_run=[BAR])
    for message in (_message("new_session", fragments=[BAR]), _message("bar again", [0, 1], BAR)):
        queue.enqueue(message)
    return queue.flush()


def _placed(messages: list[ForwardMsg]) -> list[str]:
    """The page a browser builds from ``messages`` (the main area's elements), checking each delta's place
    as Streamlit's frontend does: an index past the block's end stops the browser."""
    main: list[str] = []
    for message in messages:
        if message.WhichOneof("type") != "delta":
            continue
        index = message.metadata.delta_path[1]
        if index > len(main):
            raise IndexError(f"Bad delta path index {index} (should be between [0, {len(main)}])")
        body = message.delta.new_element.markdown.body
        main[index:index + 1] = [body]  # fmt: skip
    return main


def test_holds_full_run_sees_a_full_runs_delta_only():
    assert fragment_pages.holds_full_run([_message("new_session"), _message("title", [0, 0])])
    assert not fragment_pages.holds_full_run([_message("new_session"), _message("bar", [0, 1], BAR)])
    assert not fragment_pages.holds_full_run([_message("script_finished")])


def test_a_bar_rerun_keeps_the_unsent_page_before_it(unwrapped):
    assert fragment_pages.install()
    assert _placed(_full_run_then_bar_rerun()) == ["title", "bar again", "figure"]


def test_without_the_guard_the_browser_meets_a_gap(unwrapped):
    """What the queue guard is for: the bar's place is dropped and the page's next element lands after a
    gap. If a Streamlit upgrade fixes this, this test fails and the guard can go."""
    with pytest.raises(IndexError, match="Bad delta path index 2"):
        _placed(_full_run_then_bar_rerun())


def test_a_bar_rerun_after_a_bar_rerun_still_drops_the_old_bar(unwrapped):
    """Only a full run's messages are kept: a fragment's own earlier deltas go, as Streamlit drops them."""
    assert fragment_pages.install()
    queue = ForwardMsgQueue()
    for message in (_message("new_session", fragments=[BAR]), _message("bar", [0, 1], BAR)):
        queue.enqueue(message)
    queue.clear(retain_lifecycle_msgs=True, fragment_ids_this_run=[BAR])
    assert [m.WhichOneof("type") for m in queue.flush()] == ["new_session"]


def test_a_guard_that_fails_runs_the_request_as_asked_warns_once_and_unwraps(unwrapped, monkeypatch, caplog):
    ran = []
    monkeypatch.setattr(ScriptRunner, "_run_script", lambda self, rerun_data: ran.append(rerun_data))

    class Context:  # a script thread's context: its last run was on page "new"
        page_script_hash, query_string = "new", ""

    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda suppress_warning=False: Context())

    def broken(rerun_data, page, query):
        raise AttributeError("RerunData has no fragment_id_queue")  # as if Streamlit renamed it

    assert streamlit_private.wrap_script_runs(broken)
    stale = RerunData(page_script_hash="old", fragment_id_queue=["f"])
    with caplog.at_level(logging.WARNING, logger=streamlit_private.__name__):
        ScriptRunner._run_script(None, stale)
        ScriptRunner._run_script(None, stale)
    assert ran == [stale, stale]  # both runs happened, as asked
    assert len(caplog.records) == 1 and caplog.records[0].exc_info
    assert not hasattr(ScriptRunner._run_script, "__wrapped__")  # the guard is gone: no wrapping
    assert not streamlit_private.enabled()  # and the rest of the adapter falls back too


APP = """
import streamlit as st
{guard}


@st.fragment(run_every=600)
def live(name):
    st.markdown(f"live on {{name}}")


def main():
    st.markdown("main")
    live("main")
    if st.button("Next"):
        st.switch_page(OTHER)


def other():
    st.markdown("other")
    live("other")


OTHER = st.Page(other, url_path="other")
st.navigation([st.Page(main, url_path="main", default=True), OTHER]).run()
"""
GUARD = "from txviz.app import fragment_pages\nfragment_pages.install()"


class Watched(Session):
    """A headless session that keeps the page of every run's new_session message."""

    def __init__(self, base: str):
        super().__init__(base)
        self.pages_said: list[str] = []

    def _take(self, msg) -> None:
        if msg.WhichOneof("type") == "new_session":
            self.pages_said.append(msg.new_session.page_script_hash)
        super()._take(msg)


async def _stale_fragment_rerun(base: str) -> tuple[str, str, str]:
    """(first page, page switched to, page the stale fragment run announced)."""
    session = await Watched(base).open()
    try:
        await session.finished()
        first, fragment = session.page_hash, session.fragments[0]
        await session.rerun(fragment, auto=True)  # a timer's rerun on the page it was started on
        await session.finished()
        assert session.pages_said[-1] == first  # left alone
        await session.click("Next")  # the page switches, as a lecturer's "Next step" does
        await session.finished()
        await session.wait_for(lambda text: text == "live on other")
        switched = session.page_hash
        session.page_hash = first  # the timer's request still names the page it was started on
        await session.rerun(fragment, auto=True)
        await session.finished()
        await asyncio.sleep(0.2)
        return first, switched, session.pages_said[-1]
    finally:
        await session.close()


def _serve(tmp_path, guard: str):
    return served(tmp_path, APP.format(guard=guard))


def test_a_stale_fragment_request_runs_on_the_page_the_session_is_on(tmp_path):
    with _serve(tmp_path, GUARD) as base:
        first, switched, announced = run_async(_stale_fragment_rerun(base))
    assert first != switched
    assert announced == switched  # the browser keeps its page


def test_without_the_guard_streamlit_announces_the_page_left(tmp_path):
    """What the guard is for: the browser is told to go back to the page it left (and empties it). If a
    Streamlit upgrade fixes this, this test fails and the guard can go."""
    with _serve(tmp_path, "") as base:
        first, switched, announced = run_async(_stale_fragment_rerun(base))
    assert announced == first != switched
