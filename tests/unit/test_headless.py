"""The headless session speaks Streamlit's protocol: it opens a page, its run_every fragment reruns on the
client's timer (the server only announces it), it sees the page's text change, and its click runs a
button's callback."""

from __future__ import annotations

import ssl

import pytest
from tiny_apps import run_async, served

from txviz.app.lecture.headless import Session, address_name, is_loopback, tls_for

TINY = """
import pathlib
import streamlit as st

STEP = pathlib.Path(__file__).with_name("step.txt")
st.markdown("a tiny page")


@st.fragment(run_every=0.3)
def bar():
    st.markdown(f"Step {STEP.read_text().strip()}")
    if st.button("Next"):
        STEP.write_text(str(int(STEP.read_text()) + 1))


bar()
"""


@pytest.fixture(scope="module")
def tiny_app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "step.txt").write_text("1")
    with served(folder, TINY) as base:
        yield base, folder / "step.txt"


def test_a_headless_session_sees_a_step_change_through_its_own_fragment_timer(tiny_app):
    base, step = tiny_app

    async def follow() -> tuple[float, int]:
        session = await Session(base, "tiny").open()
        try:
            await session.wait_for(lambda text: text == "Step 1", timeout=60)
            assert "a tiny page" in session.texts and session.page_hash
            runs = session.runs_done
            step.write_text("2")  # another session moved the page's state: only a fragment rerun shows it
            seen = await session.wait_for(lambda text: text == "Step 2", timeout=10)
            assert session.runs_done == runs  # no full rerun: the fragment's timer did it
            return seen, len(session.texts)
        finally:
            await session.close()

    run_async(follow())


def test_a_headless_click_runs_the_buttons_callback_in_its_fragment(tiny_app):
    base, step = tiny_app
    step.write_text("5")

    async def press() -> None:
        session = await Session(base, "tiny").open()
        try:
            await session.wait_for(lambda text: text == "Step 5", timeout=60)
            assert session.fragment_of["Next"] == session.fragments[0]  # drawn by the bar's fragment
            await session.click("Next", fragment_id=session.fragment_of["Next"])
            await session.wait_for(lambda text: text == "Step 6", timeout=10)
        finally:
            await session.close()

    run_async(press())
    assert step.read_text() == "6"


def test_the_address_name_of_a_page_script():
    assert address_name("pages/21_Lecture_Room.py") == "Lecture_Room"
    assert address_name("app.py") == "app"


def test_only_this_machines_own_server_goes_unverified_over_tls():
    for host in ("127.0.0.1", "127.3.2.1", "::1", "localhost"):
        assert is_loopback(host)
        assert tls_for(host).verify_mode == ssl.CERT_NONE
    for host in ("10.0.0.5", "txviz.example.org", "::ffff:8.8.8.8", ""):
        assert not is_loopback(host)
        assert tls_for(host) is True  # websockets' default context: certificate and name checked
