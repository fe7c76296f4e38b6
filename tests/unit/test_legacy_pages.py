"""The pages/-folder workaround tells a folder-way run by public means: app.py marks each run it routes, and
a page run on a live server without that mark is one. The rule, and a fresh server where it takes over (and,
without it, Streamlit's folder mode is still there to take over from)."""

from __future__ import annotations

import asyncio
import threading
import types

import pytest
from tiny_apps import run_async, served

from txviz.app import legacy_pages
from txviz.app.lecture.headless import Session


@pytest.fixture
def live(monkeypatch):
    """A run on a live server: the browser's address is known."""
    monkeypatch.setattr(legacy_pages.st, "context", types.SimpleNamespace(url="http://127.0.0.1:8501/Page"))
    legacy_pages._RUN.routed = False


def test_a_run_app_py_routed_is_not_the_folder_way_and_the_mark_is_used_up(live):
    legacy_pages.routed()
    assert not legacy_pages.running_the_folder_way()
    assert legacy_pages.running_the_folder_way()  # the next run, not routed: Streamlit ran the page itself


def test_a_mark_counts_only_in_its_own_script_thread(live):
    other = threading.Thread(target=legacy_pages.routed)
    other.start()
    other.join()
    assert legacy_pages.running_the_folder_way()


def test_an_apptest_of_a_page_alone_is_not_the_folder_way(monkeypatch):
    monkeypatch.setattr(legacy_pages.st, "context", types.SimpleNamespace(url=None))  # AppTest: no address
    assert not legacy_pages.running_the_folder_way()


MAIN = """
import streamlit as st
from txviz.app import legacy_pages

PAGES = [st.Page(lambda: st.markdown("home"), title="Home", url_path="home", default=True),
         st.Page("pages/1_A.py")]
st.markdown("routed by the main script")
legacy_pages.routed()
st.navigation(PAGES).run()
"""
PAGE = """
import pathlib
import streamlit as st
from txviz.app import legacy_pages

if legacy_pages.running_the_folder_way():
    with open(pathlib.Path(__file__).parents[1] / "folder_way.txt", "a") as seen:  # a rerun may drop deltas
        seen.write("A ran the folder way\\n")
    {rescue}
st.markdown("A ran")
"""
RESCUE = "st.navigation([st.Page('pages/1_A.py')]); st.rerun()  # what take_over does, with these pages"


async def _first_visit(base: str) -> set[str]:
    """The texts a fresh server's first session on page A was sent."""
    session = await Session(base, "A").open()
    try:
        await session.wait_for(lambda text: text == "A ran", timeout=60)
        await session.finished()
        await asyncio.sleep(0.3)  # a rerun the run asked for has begun, if it did
        return set(session.texts)
    finally:
        await session.close()


def _serve(folder, rescue: str):
    (folder / "pages").mkdir()
    (folder / "pages" / "1_A.py").write_text(PAGE.format(rescue=rescue))
    return served(folder, MAIN)


def test_a_fresh_servers_first_visit_to_a_page_is_taken_over_by_the_main_script(tmp_path):
    with _serve(tmp_path, RESCUE) as base:
        texts = run_async(_first_visit(base))
    assert (tmp_path / "folder_way.txt").read_text() == "A ran the folder way\n"  # once, then routed
    assert {"routed by the main script", "A ran"} <= texts


def test_without_the_take_over_streamlit_runs_the_page_the_folder_way(tmp_path):
    """What the workaround is for. If a Streamlit upgrade drops the pages/-folder mode, this fails and the
    workaround can go."""
    with _serve(tmp_path, "pass") as base:
        texts = run_async(_first_visit(base))
    assert (tmp_path / "folder_way.txt").exists() and "routed by the main script" not in texts
