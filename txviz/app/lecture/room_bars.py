"""The room bar at the top of every page: the lecturer's controls, the projector window's join code and
reveal, or a student's follow bar and answer box.

The live parts are fragments reading only the store, so waiting costs a store read, never the page's
model work: a follower's reruns when the lecturer changes the room (a push) and every room.POLL_S besides,
the lecturer's every room.TALLY_S.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable

import streamlit as st

from txviz.app import projector
from txviz.app.lecture import asking, push, room
from txviz.app.lecture.room_lectures import lectures, question_of
from txviz.lecture import figures
from txviz.lecture.questions import Question, Truth, tally, truth_label
from txviz.lecture.rooms import RoomError, StoreDown, UnknownRoom
from txviz.lecture.rooms.base import AnswersClosed, RoomState
from txviz.lecture.steps import Step

log = logging.getLogger(__name__)
SENT = "_room_sent"  # question id -> the answer this window last sent (JSON)
REVEAL = "_room_reveal_now"  # set by the Reveal button: the truth is computed in the run, not the callback
STARTED, STEP_SINCE = "_room_started", "_room_step_since"  # the lecturer's timer: the room, the step
Load = Callable[[str], object]


def room_bar(page: str, title: str, load: Load) -> None:
    """At the top of every page while in a room (one call from setup_page); nothing otherwise."""
    if not (st.query_params.get("room") or st.session_state.get(room.CODE)):
        return  # not in a room: nothing read, nothing drawn
    with trouble_said():
        room.from_address()
        room.keep_in_address()
        room.keep_credentials()
        going = st.session_state.pop(room.GO, None)
        if going:
            room.go_to(going)
        note = st.session_state.get(room.NOTE)  # kept: a page switch right after would hide it
        if note:
            st.warning(note)
        if room.is_lecturer():
            console = page == room.ROOM_PAGE  # the Lecture Room page is the presenter's console
            if not console:
                room.tell_class()  # put off by a console run that then switched away (a single window)
            take_reveal(load, later=console)
            if not console:
                lecturer_bar(page, title, load)
        elif room.is_projector():
            _projector_live(page, load)
        elif room.code():
            _student_live(page, load)


@contextlib.contextmanager
def trouble_said():
    """A room gone, a store away or a refusal is said on screen and logged, never raised: the page below
    still works. Each fragment holds one of its own, since its reruns skip room_bar."""
    try:
        yield
    except UnknownRoom as error:  # closed or expired: this session leaves it
        log.info("room %s: gone (%s)", room.code(), type(error).__name__)
        room.leave()
        st.session_state[room.LEFT] = f"{error} You have left the room."
        _say_left()
    except StoreDown as error:
        log.warning("room %s: %s", room.code(), error)
        st.warning(f"Reconnecting to the room... {error}")
    except RoomError as error:  # a wrong code, too many tries, a full room
        log.info("room %s: %s", room.code(), type(error).__name__)
        st.warning(str(error))


def take_reveal(load: Load, later: bool = False) -> None:
    """The Reveal button's work, in the run (the truth may need the model): reveal, then tell the room
    (``later``: once this console run has drawn)."""
    if not st.session_state.pop(REVEAL, False):
        return
    state = room.store().state(room.code())
    if state.question and not state.revealed:
        asked = question_of(state.question)
        found = truth(asked, load) if asked else None
        room.store().reveal(room.code(), st.session_state.get(room.KEY), found.label if found else "")
        if later:
            room.announce_after_run()
        else:
            room.announce()


def _step_label(state: RoomState) -> str:
    shown = state.step.get("title") or "no step yet"
    return f"Step {state.index + 1} of {state.total}: {shown}" if state.total else shown


def _say_left() -> None:
    """Why this session left its room, kept: a rerun that cut the run which said it would lose it."""
    if st.session_state.get(room.LEFT):
        st.info(st.session_state[room.LEFT])


def lecturer_bar(page: str, title: str, load: Load) -> None:
    """Room code, followers and tally (live), previous/next, reveal; talking points in the sidebar."""
    state = room.store().state(room.code())
    with st.container(border=True, key="room_lecturer_bar"):
        info, back, forward, act = st.columns([4, 1, 1, 1.3], vertical_alignment="center")
        info.markdown(f"**Room {room.code()}** · {_step_label(state)}")  # code and titles: our own text
        if state.total:
            step_buttons(state, back, forward, follow=True)
        else:
            forward.button("Bring the class here", key="_room_here", width="stretch", type="primary",
                           on_click=room.bring_here, args=(page, title))  # fmt: skip
        if state.question and not state.revealed:
            act.button("Reveal", key="_room_reveal", width="stretch", on_click=ask_reveal)
        lecturer_live(load)
    step = room.step_of(state)
    if step and step.points:  # folded while presenting: the points are the lecturer's, not the room's
        with st.sidebar.expander("Talking points (your screen only)", expanded=not projector.presenting()):
            for point in step.points:
                st.markdown(f"- {point}")
    chosen = lectures().get(state.lecture)
    if chosen and state.index + 1 < len(chosen.steps):
        st.sidebar.caption(f"Next: {chosen.steps[state.index + 1].title}")


def step_buttons(state: RoomState, back, forward, follow: bool) -> None:
    """Previous and Next step; with ``follow`` the lecturer's window opens the step too (one window),
    else it stays where it is (the presenter's console)."""
    back.button("Previous", key="_room_previous", disabled=state.index <= 0, width="stretch",
                on_click=_move, args=(state.index - 1, follow))  # fmt: skip
    forward.button("Next step", key="_room_next", disabled=state.index >= state.total - 1, width="stretch",
                   type="primary", on_click=_move, args=(state.index + 1, follow))  # fmt: skip


def _move(index: int, follow: bool) -> None:
    room.move(room.store().state(room.code()), index, follow)
    st.session_state[STEP_SINCE] = time.monotonic()


def ask_reveal() -> None:
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


def clock(seconds: float) -> str:
    """A timer as the lecturer reads it: m:ss, or h:mm:ss past an hour."""
    minutes, secs = divmod(int(max(seconds, 0)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _timer() -> str:
    """Time in the room and on this step (since this window started them, or since a reload)."""
    now = time.monotonic()
    started = st.session_state.setdefault(STARTED, now)
    since = st.session_state.setdefault(STEP_SINCE, now)
    return f"{clock(now - started)} in the room · {clock(now - since)} on this step"


@st.fragment(run_every=room.TALLY_S)
def lecturer_live(load: Load) -> None:
    """Followers, a timer and the tally, read from the store every TALLY_S without rerunning the page."""
    if not room.is_lecturer():
        return  # the room closed in another tab, or this timer outlived the session's part
    with trouble_said():
        _lecturer_live(load)


def _lecturer_live(load: Load) -> None:
    state = room.store().state(room.code())
    followers = room.store().followers(room.code())
    asked = question_of(state.question)
    if not asked:
        st.caption(f"{followers} following · {_timer()}")
        return
    given = answers_of(room.code(), state.question["id"])
    st.caption(f"{followers} following · {len(given)} answers to: {asked[0].prompt} · {_timer()}")
    if state.revealed:
        reveal_view(asked, given, load, "_room")


def reveal_view(asked: tuple[Question, str], given: list, load: Load, key: str) -> None:
    """At reveal: the class's tally beside the live model's truth (the lecturer's and the projector's)."""
    found = truth(asked, load)
    chart, view = st.columns(2)
    with chart:
        projector.draw(figures.tally_figure(tally(asked[0], given, found), truth_label(asked[0], found)),
                       key=f"{key}_tally")  # fmt: skip
    with view:
        st.markdown(f"**The model says:** {found.label}")  # the model's token, drawn as markdown text
        explaining = figures.truth_figure(asked[0], found)
        if explaining is not None:
            projector.draw(explaining, key=f"{key}_truth")


def _follow_step(state: RoomState, page: str, following: bool) -> bool:
    """Open the room's step when the lecturer moved (a follower that opened another page is wandering);
    whether this window still follows."""
    step = Step.from_shared(state.step) if state.step else None
    at = step.key if step else None
    arriving = room.switching_away(page)
    if following and step and not arriving and st.session_state.get(room.AT) == at and page != step.page:
        following = st.session_state[room.FOLLOW] = False  # the student opened another page: wandering
    # A switch asked for from a fragment can be undone by Streamlit: a fragment rerun arriving meanwhile
    # (a poll, a push) is merged into the pending full rerun with its own, older page. Still here while
    # arriving means that happened: ask again.
    undone = arriving and step and page != step.page
    if following and step and (st.session_state.get(room.AT) != at or undone):
        room.warm_from(state.lecture, state.index)  # on another replica the first follower warms it there
        room.go_to(step)  # the lecturer moved: open the step, its settings with it
    return following


def _read_followed(code: str) -> RoomState:
    """The room's state for a follower's bar, which also listens for pushes."""
    state = room.store().state(code)
    push.follow(code, room.store())  # the lecturer's next change reruns this fragment at once
    return state


@st.fragment(run_every=room.POLL_S)
def _projector_live(page: str, load: Load) -> None:
    """The projector window's bar: it follows every step and shows the join code; at reveal, the tally and
    the truth. It holds no key and takes no seat."""
    _while_in_room(_projector_bar, page, load)


def _projector_bar(page: str, load: Load) -> None:
    code = room.code()
    state = _read_followed(code)
    st.session_state[room.FOLLOW] = True
    _follow_step(state, page, following=True)
    with st.container(border=True, key="room_projector_bar"):
        info, scan = st.columns([6, 1], vertical_alignment="center")
        info.markdown(f"**Join at {room.join_url()}** · code **{code}** · {_step_label(state)}")  # our text
        scan.image(room.join_qr(room.join_url()), width=110)
        asked = question_of(state.question)
        if asked and state.revealed:
            reveal_view(asked, answers_of(code, state.question["id"]), load, "_room_projector")


@st.fragment(run_every=room.POLL_S)
def _student_live(page: str, load: Load) -> None:
    """A student's bar: follow the lecturer's step (the page switches by itself) or explore alone."""
    _while_in_room(_student_bar, page, load)


def _while_in_room(bar: Callable[[str, Load], None], page: str, load: Load) -> None:
    """A follower's bar, drawn while the session is in its room (a fragment's timer can outlive the room:
    then why it left is said) and with the room's troubles said, never raised."""
    if not room.code():
        _say_left()
        return
    with trouble_said():
        bar(page, load)


def _student_bar(page: str, load: Load) -> None:
    code, seat = room.code(), st.session_state.get(room.SEAT) or ""
    state = _read_followed(code)
    room.mark_seen(code, seat)
    following = _follow_step(state, page, st.session_state.get(room.FOLLOW, True))
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
    """The question on the student's laptop until the reveal; then the answer the room counted for this
    seat, marked against the truth. The last answer before the reveal counts (said when it replaces one)."""
    question, model = asked
    qid, key = state.question["id"], f"_room_q_{state.question['id']}"
    loaded = load(asking.model_of(question, model)) if question.asks_model else None
    counted = room.store().answer_of(code, qid, seat)
    if state.revealed:  # answers are closed: no control, only what the room counted
        st.markdown(f"**Predict:** {question.prompt}")  # the lecture file's own text
        answer = json.loads(counted) if counted is not None else None
        if answer is None:
            st.caption("Answers closed at the reveal before yours arrived.")
        asking.reveal(
            question, asking.live_truth(question, loaded), asking.model_of(question, model), key, answer
        )
        return
    options = asking.offered(question, loaded)
    answer = asking.ask(question, key, options)
    sent = st.session_state.setdefault(SENT, {})  # what this window sent: another tab's answer is not resent
    if answer is not None and sent.get(qid) != json.dumps(answer):
        try:
            replaced = room.store().answer(code, seat, qid, json.dumps(answer))
        except AnswersClosed as error:
            st.warning(str(error))
            return
        sent[qid] = counted = json.dumps(answer)
        if replaced is not None and replaced != counted:
            st.session_state[f"{key}_replaced"] = asking.label(question, json.loads(replaced), options)
    if counted is None:
        return
    replaced = st.session_state.get(f"{key}_replaced")
    said = f" It replaces your earlier one ({replaced})." if replaced else ""
    st.caption(
        f"The room has your answer: {asking.label(question, json.loads(counted), options)}.{said} "
        "The last one before the reveal counts."
    )
