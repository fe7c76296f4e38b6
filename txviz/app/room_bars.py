"""The room bar at the top of every page: the lecturer's controls, or a student's follow bar and answer box.

Both live parts are fragments that rerun every room.POLL_S reading only the store, so waiting costs a
store read, never the page's model work.
"""

from __future__ import annotations

import json

import streamlit as st

from txviz.app import projector, room
from txviz.app.room_lectures import lectures, truth_of
from txviz.rooms import RoomError, StoreDown, UnknownRoom
from txviz.rooms.base import RoomState
from txviz.rooms.figures import tally_chart

ANSWERED = "_room_answered"  # question id -> this student's answer


def room_bar(page_script: str, title: str) -> None:
    """At the top of every page while in a room (one call from setup_page); nothing otherwise."""
    if not (st.query_params.get("room") or st.session_state.get(room.CODE)):
        return  # not in a room: nothing read, nothing drawn
    try:
        room.from_address()
        room.keep_in_address()
        going = st.session_state.pop(room.GO, None)
        if going:
            room.go_to(going)
        note = st.session_state.get(room.NOTE)  # kept: a page switch right after would hide it
        if note:
            st.warning(note)
        if room.is_lecturer():
            lecturer_bar(page_script, title)
        else:
            student_bar(page_script)
    except UnknownRoom as error:
        room.leave()
        st.info(f"{error} You have left the room.")
    except RoomError as error:  # StoreDown too: the page below still works
        st.warning(str(error))


def _step_label(state: RoomState) -> str:
    shown = state.step.get("title") or "no step yet"
    return f"Step {state.index + 1} of {state.total}: {shown}" if state.total else shown


def lecturer_bar(page_script: str, title: str) -> None:
    """Room code, followers and tally (live), previous/next, ask/reveal; talking points in the sidebar."""
    state = room.store().state(room.code())
    with st.container(border=True, key="room_lecturer_bar"):
        info, back, forward, act = st.columns([4, 1, 1, 1.3], vertical_alignment="center")
        info.markdown(f"**Room {room.code()}** · {_step_label(state)}")  # code and titles: our own text
        if state.total:
            back.button("Previous", key="_room_previous", disabled=state.index <= 0, width="stretch",
                        on_click=_move, args=(state.index - 1,))  # fmt: skip
            forward.button("Next step", key="_room_next", disabled=state.index >= state.total - 1,
                           width="stretch", type="primary", on_click=_move, args=(state.index + 1,))  # fmt: skip
        else:
            forward.button("Bring the class here", key="_room_here", width="stretch", type="primary",
                           on_click=room.bring_here, args=(page_script, title))  # fmt: skip
        if state.question and not state.revealed:
            act.button("Reveal", key="_room_reveal", width="stretch", on_click=_reveal)
        elif state.question:
            act.button("Hide answer", key="_room_hide", width="stretch", on_click=_clear_question)
        _lecturer_live()
    step = room.step_of(state)
    if step and step.talking_points:
        with st.sidebar.expander("Talking points (your screen only)", expanded=True):
            for point in step.talking_points:
                st.markdown(f"- {point}")
    chosen = lectures().get(state.lecture)
    if chosen and state.index + 1 < len(chosen.steps):
        st.sidebar.caption(f"Next: {chosen.steps[state.index + 1].title}")


def _move(index: int) -> None:
    room.move(room.store().state(room.code()), index)


def _reveal() -> None:
    state = room.store().state(room.code())
    room.store().reveal(room.code(), st.session_state.get(room.KEY), truth_of(state.question or {}))


def _clear_question() -> None:
    room.store().set_question(room.code(), st.session_state.get(room.KEY), None)


@st.fragment(run_every=room.POLL_S)
def _lecturer_live() -> None:
    """Followers and the tally, read from the store every POLL_S without rerunning the page."""
    try:
        state = room.store().state(room.code())
        followers = room.store().followers(room.code())
    except UnknownRoom:
        return
    except StoreDown as error:
        st.warning(str(error))
        return
    question = state.question
    if not question:
        st.caption(f"{followers} following")
        return
    tally = room.store().tally(room.code(), question["id"])
    st.caption(f"{followers} following · {sum(tally.values())} answers to: {question.get('prompt', '')}")
    if state.revealed:
        truth = question.get("truth", "")
        chart, said = st.columns([2, 1])
        with chart:
            projector.draw(tally_chart(tally, truth, "The class's answers"), key="_room_tally")
        said.metric("The model says", truth or "-")


def student_bar(page_script: str) -> None:
    """A student's bar: follow the lecturer's step (the page switches by itself) or explore alone."""
    _student_live(page_script)


@st.fragment(run_every=room.POLL_S)
def _student_live(page_script: str) -> None:
    code, seat = room.code(), st.session_state.get(room.SEAT) or ""
    try:
        state = room.store().state(code)
        room.store().seen(code, seat)
    except UnknownRoom as error:
        room.leave()
        st.info(f"{error} You have left the room.")
        return
    except StoreDown as error:
        st.warning(str(error))
        return
    step = state.step
    at = json.dumps(step, sort_keys=True) if step else None
    following = st.session_state.get(room.FOLLOW, True)
    if following and step and st.session_state.get(room.AT) == at and page_script != step.get("page"):
        following = st.session_state[room.FOLLOW] = False  # the student opened another page: wandering
    if following and step and st.session_state.get(room.AT) != at:
        room.go_to(step)  # the lecturer moved: open the step, its settings with it
    with st.container(border=True, key="room_student_bar"):
        info, control = st.columns([4, 1.4], vertical_alignment="center")
        where = "Following the lecturer" if following else "Exploring on your own"
        info.markdown(f"**Room {code}** · {where} · {_step_label(state)}")
        if following:
            control.button("Explore on my own", key="_room_wander", width="stretch", on_click=_wander)
        else:
            control.button("Back to the lecturer", key="_room_back", width="stretch", type="primary",
                           on_click=_back)  # fmt: skip
        if state.question:
            _question(state, code, seat)


def _wander() -> None:
    st.session_state[room.FOLLOW] = False


def _back() -> None:
    st.session_state[room.FOLLOW] = True
    st.session_state[room.AT] = None  # the fragment's next line opens the lecturer's step


def _question(state: RoomState, code: str, seat: str) -> None:
    """The question on the student's laptop; after reveal, their own answer marked against the truth."""
    question = state.question or {}
    qid = str(question.get("id", ""))
    mine = st.session_state.setdefault(ANSWERED, {}).get(qid)
    st.markdown(f"**Question:** {question.get('prompt', '')}")
    if state.revealed:
        truth = question.get("truth", "")
        if mine is None:
            st.info(f"The model says: {truth}")
        elif mine == truth:
            st.success(f"Your answer, {mine}, is what the model says.")
        else:
            st.error(f"Your answer: {mine}. The model says: {truth}.")
        return
    if mine is not None:
        st.caption(f"Your answer: {mine} (sent)")
        return
    key = f"_room_answer_{qid}"
    given = answer_input(question, key=key)
    st.button("Send answer", key=f"_room_send_{qid}", disabled=given in (None, ""), on_click=_send,
              args=(code, seat, qid, key))  # fmt: skip


def _send(code: str, seat: str, qid: str, key: str) -> None:
    """A callback: send the answer once (the store would not count a second one either)."""
    given = st.session_state.get(key)
    if given in (None, ""):
        return
    room.store().answer(code, seat, qid, given)
    st.session_state.setdefault(ANSWERED, {})[qid] = str(given)


def answer_input(question: dict, key: str):
    """The widget of the question's kind: options to choose, a number slider, or a typed token."""
    kind = question.get("kind", "choice")
    if kind == "number":
        low, high = float(question.get("min", 0.0)), float(question.get("max", 1.0))
        return st.slider(
            "Your answer", low, high, (low + high) / 2, float(question.get("step", 0.01)), key=key
        )
    if kind == "text":
        return st.text_input("Your answer", key=key, max_chars=60).strip()
    return st.radio("Your answer", list(question.get("options", [])), index=None, key=key, horizontal=True)
