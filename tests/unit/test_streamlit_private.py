"""The adapter to Streamlit's internals: the pinned Streamlit has everything txviz reads of them; one missing
gives one warning and every fallback (no push, no fragment guard, no warm-up) with no page run failing;
the switch forces the same; and no other module of txviz imports Streamlit's internals."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
from streamlit.testing.v1 import AppTest

from txviz.app import fragment_pages, streamlit_private
from txviz.app.lecture import push, warmup
from txviz.lecture.steps import Step

PACKAGE = Path(__file__).resolve().parents[2] / "txviz"
PUBLIC = {"streamlit", "streamlit.components.v1", "streamlit.testing.v1"}  # Streamlit's documented APIs


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """A verdict made afresh in each test, and ScriptRunner put back as it was after it."""
    monkeypatch.delenv(streamlit_private.SWITCH, raising=False)
    monkeypatch.setattr(streamlit_private, "_STATE", {})
    monkeypatch.setattr(ScriptRunner, "_run_script", ScriptRunner._run_script)
    monkeypatch.setattr(push, "_ROOMS", {})


def warnings_of(caplog) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.name == streamlit_private.__name__ and r.levelno >= logging.WARNING
    ]


def test_the_pinned_streamlit_has_everything_txviz_reads(caplog):
    """If a Streamlit upgrade renames any of these, the app falls back (push, guard and warm-up off): fail here."""
    assert streamlit_private.missing_internals() == []
    with caplog.at_level(logging.WARNING):
        assert streamlit_private.check()
    assert warnings_of(caplog) == []


def test_a_missing_internal_gives_one_warning_and_every_fallback(monkeypatch, caplog):
    monkeypatch.delattr(AppSession, "_call_soon_on_event_loop")
    wrapped_before = ScriptRunner._run_script
    with caplog.at_level(logging.WARNING):
        assert not streamlit_private.check()
        assert not streamlit_private.check()  # decided once: no second warning
        assert not fragment_pages.install()
        assert push.rerun_fragment("s1", push.Seat("f", "p", "")) is None
        assert warmup.warm([Step("p")], base="http://127.0.0.1:1") is None
    (warning,) = warnings_of(caplog)
    assert "AppSession._call_soon_on_event_loop" in warning.getMessage()
    assert "poll" in warning.getMessage()  # what the app does instead
    assert ScriptRunner._run_script is wrapped_before  # the fallback wraps nothing


def test_a_missing_proto_field_or_parameter_is_reported_in_words(monkeypatch):
    fields = (("streamlit.proto.ForwardMsg_pb2", "ForwardMsg", ("auto_rerun.no_such_field",)),)
    calls = (("streamlit.runtime", "Runtime.get_app_session", ("session_key",)),)
    monkeypatch.setattr(streamlit_private, "PROTO_FIELDS", fields)
    monkeypatch.setattr(streamlit_private, "NEEDED", calls)
    assert streamlit_private.missing_internals() == [
        "streamlit.runtime.Runtime.get_app_session takes no session_key",
        "ForwardMsg.auto_rerun.no_such_field",
    ]


def test_the_switch_forces_the_fallback(monkeypatch, caplog):
    monkeypatch.setenv(streamlit_private.SWITCH, "off")
    with caplog.at_level(logging.WARNING):
        assert not streamlit_private.check()
        assert not fragment_pages.install()
    (warning,) = warnings_of(caplog)
    assert streamlit_private.SWITCH in warning.getMessage()


def test_an_internal_that_fails_at_run_time_warns_once_and_falls_back(monkeypatch, caplog):
    from streamlit.runtime.scriptrunner_utils import script_run_context

    class Broken:
        @staticmethod
        def get():
            raise AttributeError("FragmentThreadState has no fragment_id")

    assert streamlit_private.check()  # the start-up check passed; then Streamlit misbehaves in a run
    monkeypatch.setattr(script_run_context, "ThreadState", Broken)
    monkeypatch.setattr(
        "streamlit.runtime.scriptrunner.get_script_run_ctx", lambda suppress_warning: object()
    )
    with caplog.at_level(logging.WARNING):
        assert streamlit_private.running_fragment() is None
        assert streamlit_private.running_fragment() is None
    (warning,) = warnings_of(caplog)
    assert warning.exc_info and not streamlit_private.check()


PAGE = """
import streamlit as st
from txviz.app import fragment_pages, streamlit_private
from txviz.app.lecture import push, warmup
from txviz.lecture.steps import Step

streamlit_private.check()
fragment_pages.install()


@st.fragment(run_every=600)
def bar():
    st.markdown(f"following: {push.follow('ROOM')}")


bar()
st.markdown(f"pushed: {push.push_here('ROOM')}")
st.markdown(f"warm-up: {warmup.warm([Step('p')], base='http://127.0.0.1:1')}")
"""


@pytest.mark.parametrize("missing", [False, True])
def test_no_page_run_fails_whether_the_internals_are_there_or_not(monkeypatch, missing):
    if missing:
        monkeypatch.delattr(AppSession, "_call_soon_on_event_loop")
    monkeypatch.setattr(warmup, "_run", lambda base, steps: None)  # nothing to open at that address
    at = AppTest.from_string(PAGE, default_timeout=60).run()
    assert not at.exception
    shown = [m.value for m in at.markdown]
    assert shown[0] == f"following: {not missing}"  # a push registers only with the internals there
    assert shown[1] == "pushed: 0"  # an AppTest has no server to push on
    assert (shown[2] == "warm-up: None") == missing


def test_only_the_adapter_imports_streamlits_internals():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            private = [n for n in names if n.startswith("streamlit.") and n not in PUBLIC]
            if private and path.name != "streamlit_private.py":
                found.setdefault(str(path.relative_to(PACKAGE.parent)), []).extend(private)
    assert found == {}
