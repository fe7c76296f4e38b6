"""A follower's bar opens the room's step: once when the lecturer moves, again when Streamlit undid the
switch (a fragment rerun merged into the pending switch with its older page), never for a wanderer."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from txviz.app.lecture import room
from txviz.lecture.steps import Step

STEP = Step("Attention_Explorer", {"layer": 3}, title="A head")
HERE, THERE = "Self_Attention", STEP.page


def follow(page: str, at: str | None, switching: str | None, step: dict) -> None:
    """The bar's decision on ``page`` (its name), with the session's last step and a switch under way (run
    as an AppTest script: only its arguments come in; the room keeps the step as a dict)."""
    import time

    import streamlit as st

    from txviz.app.lecture import room, room_bars
    from txviz.lecture.rooms.base import RoomState

    st.session_state[room.AT] = at
    if switching:
        st.session_state[room.SWITCHING] = (switching, time.monotonic())
    state = RoomState(code="ABCDEF", title="t", lecture="", index=1, step=step, version=2)
    st.session_state["following"] = room_bars._follow_step(state, page, following=True)


@pytest.fixture
def opened(monkeypatch) -> list[Step]:
    opened: list[Step] = []
    monkeypatch.setattr(room, "go_to", opened.append)
    monkeypatch.setattr(room, "warm_from", lambda lecture, index: None)
    return opened


@pytest.mark.parametrize(
    ("page", "at", "switching", "opens", "following"),
    [
        (HERE, None, None, True, True),  # the lecturer moved: open the step
        (HERE, STEP.key, THERE, True, True),  # asked, undone, still here: again
        (THERE, STEP.key, None, False, True),  # arrived: nothing to do
        (HERE, STEP.key, None, False, False),  # opened another page: wandering
    ],
)
def test_the_bar_opens_the_step_when_it_must(opened, page, at, switching, opens, following):
    at_test = AppTest.from_function(follow, args=(page, at, switching, STEP.shared())).run()
    assert not at_test.exception
    assert (opened == [STEP]) is opens
    assert at_test.session_state["following"] is following
