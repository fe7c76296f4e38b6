"""The room bar at the top of every page: the lecturer's controls, or a student's follow bar and answer box.

Both live parts are fragments reading only the store, so waiting costs a store read, never the page's
model work: a student's reruns when the lecturer changes the room (a push) and every room.POLL_S besides,
the lecturer's every room.TALLY_S.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import streamlit as st

from txviz.app import asking, projector, push, room
from txviz.app.room_lectures import lectures, question_of
from txviz.lecture import figures
from txviz.lecture.questions import Question, Truth, tally, truth_label
from txviz.rooms import RoomError, StoreDown, UnknownRoom
from txviz.rooms.base import RoomState

SENT = "_room_sent"  # question ids this student's answer went to the store for
REVEAL = "_room_reveal_now"  # set by the Reveal button: the truth is computed in the run, not the callback
Load = Callable[[str], object]


def room_bar(page_script: str, title: str, load: Load) -> None:
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
            lecturer_bar(page_script, title, load)
        else:
            _student_live(page_script, load)
    except UnknownRoom as error:
        room.leave()
        st.info(f"{error} You have left the room.")
    except RoomError as error:  # StoreDown too: the page below still works
        st.warning(str(error))


def _step_label(state: RoomState) -> str:
    shown = state.step.get("title") or "no step yet"
    return f"Step {state.index + 1} of {state.total}: {shown}" if state.total else shown


def lecturer_bar(page_script: str, title: str, load: Load) -> None:
    """Room code, followers and tally (live), previous/next, reveal; talking points in the sidebar."""
    state = room.store().state(room.code())
    if st.session_state.pop(REVEAL, False) and state.question:
        asked = question_of(state.question)
        found = truth(asked, load) if asked else None
        state = room.store().reveal(room.code(), st.session_state.get(room.KEY), found.label if found else "")
        room.announce()
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
            act.button("Reveal", key="_room_reveal", width="stretch", on_click=_ask_reveal)
        _lecturer_live(load)
    step = room.step_of(state)
    if step and step.points:
        with st.sidebar.expander("Talking points (your screen only)", expanded=True):
            for point in step.points:
                st.markdown(f"- {point}")
    chosen = lectures().get(state.lecture)
    if chosen and state.index + 1 < len(chosen.steps):
        st.sidebar.caption(f"Next: {chosen.steps[state.index + 1].title}")


def _move(index: int) -> None:
    room.move(room.store().state(room.code()), index)


def _ask_reveal() -> None:
    st.session_state[REVEAL] = True


def truth(asked: tuple[Question, str], load: Load) -> Truth:
    """The live model's truth (cached for every session: the students' reveal reads the same)."""
    question, model = asked
    return asking.live_truth(
        question, load(asking.model_of(question, model)) if question.asks_model else None
    )


def answers_of(code: str, qid: str) -> list:
    """The room's answers to a question as the asker gave them (JSON values)."""
    return [json.loads(a) for a in room.store().answers(code, qid).values()]


@st.fragment(run_every=room.TALLY_S)
def _lecturer_live(load: Load) -> None:
    """Followers and the tally, read from the store every TALLY_S without rerunning the page."""
    try:
        state = room.store().state(room.code())
        followers = room.store().followers(room.code())
    except UnknownRoom:
        return
    except StoreDown as error:
        st.warning(str(error))
        return
    asked = question_of(state.question)
    if not asked:
        st.caption(f"{followers} following")
        return
    given = answers_of(room.code(), state.question["id"])
    st.caption(f"{followers} following · {len(given)} answers to: {asked[0].prompt}")
    if state.revealed:
        found = truth(asked, load)
        chart, view = st.columns(2)
        with chart:
            projector.draw(figures.tally_figure(tally(asked[0], given, found), truth_label(asked[0], found)),
                           key="_room_tally")  # fmt: skip
        with view:
            st.markdown(f"**The model says:** {found.label}")  # the model's token, drawn as markdown text
            explaining = figures.truth_figure(asked[0], found)
            if explaining is not None:
                projector.draw(explaining, key="_room_truth")


@st.fragment(run_every=room.POLL_S)
def _student_live(page_script: str, load: Load) -> None:
    """A student's bar: follow the lecturer's step (the page switches by itself) or explore alone."""
    code, seat = room.code(), st.session_state.get(room.SEAT) or ""
    try:
        state = room.store().state(code)
        room.mark_seen(code, seat)
        push.follow(code, room.store())  # the lecturer's next change reruns this fragment at once
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
    arriving = room.switching_away(page_script)
    if (
        following
        and step
        and not arriving
        and st.session_state.get(room.AT) == at
        and page_script != step.get("page")
    ):
        following = st.session_state[room.FOLLOW] = False  # the student opened another page: wandering
    if following and step and st.session_state.get(room.AT) != at:
        room.warm_from(state.lecture, state.index)  # on another replica the first follower warms it there
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
        asked = question_of(state.question)
        if asked:
            _question(state, asked, code, seat, load)


def _wander() -> None:
    st.session_state[room.FOLLOW] = False


def _back() -> None:
    st.session_state[room.FOLLOW] = True
    st.session_state[room.AT] = None  # the fragment's next line opens the lecturer's step


def _question(state: RoomState, asked: tuple[Question, str], code: str, seat: str, load: Load) -> None:
    """The question on the student's laptop; after reveal, their own answer marked against the truth."""
    question, model = asked
    qid, key = state.question["id"], f"_room_q_{state.question['id']}"
    loaded = load(asking.model_of(question, model)) if question.asks_model else None
    answer = asking.ask(question, key, asking.offered(question, loaded))
    sent = st.session_state.setdefault(SENT, set())
    if answer is not None and qid not in sent:
        room.store().answer(code, seat, qid, json.dumps(answer))  # counted once, even if sent again
        sent.add(qid)
    if state.revealed:
        asking.reveal(
            question, asking.live_truth(question, loaded), asking.model_of(question, model), key, answer
        )
