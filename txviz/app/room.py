"""Being in a lecture room: who this session is (lecturer or student), the room bar every page shows,
and following the lecturer's step.

Membership lives in the session and in the address (``room=CODE``, the lecturer's ``key=TOKEN``, a
student's ``seat``), so a reload rejoins. A student's bar is a fragment that reads only the store: the
lecturer's change pushes it to rerun at once (txviz.app.push), and it polls every POLL_S as a safety net.
An idle follower never reruns its page, so it never repeats the page's model work.
"""

from __future__ import annotations

import json
import os
import time

import streamlit as st

from txviz.app import links, projector, push, warmup
from txviz.app.room_lectures import lectures, page_settings, question_ref, shared
from txviz.rooms import NotLecturer, RoomStore, clean_code, open_store
from txviz.rooms.base import RoomState

# A follower's fragment reruns when the lecturer moves (a push), and reads the store this often besides,
# in case a push was lost. Each poll is a fragment rerun (3-4 ms of server CPU; `bench lecture`).
POLL_S = float(os.environ.get("TXVIZ_ROOM_POLL_S", "10.0"))
TALLY_S = 2.0  # the lecturer's followers count and tally: one session, answers show within this
CODE, KEY, SEAT = "_room_code", "_room_key", "_room_seat"
FOLLOW, AT, NOTE, GO = "_room_follow", "_room_at", "_room_note", "_room_go_to"
SWITCHING = "_room_switching"  # (page, when) of a switch this session started and has not yet arrived at
SWITCH_S = 10.0  # after this long a switch that never arrived no longer counts
SEEN_AT = "_room_seen_at"
SEEN_S = 3.0  # a follower tells the store it is there at most this often (FOLLOWING_S counts it meanwhile)
PARAMS = ("room", "key", "seat")  # the address keeps membership; copied view links leave them out
ROOM_PAGE = "pages/21_Lecture_Room.py"


@st.cache_resource(show_spinner=False)
def store() -> RoomStore:
    """The server's one room store (Redis when TXVIZ_REDIS_URL is set)."""
    return open_store()


def from_address() -> None:
    """A room link (room=, key=, seat=) opens this session in that room; a wrong key makes a student."""
    code = clean_code(st.query_params.get("room"))
    if not code or (
        code == st.session_state.get(CODE) and st.query_params.get("key") == st.session_state.get(KEY)
    ):
        return
    key = st.query_params.get("key")
    if key:
        try:
            store().check(code, key)
        except NotLecturer:
            st.session_state[NOTE] = "This link's lecturer key is not the room's: you joined as a student."
            key = None
    st.session_state.update({CODE: code, KEY: key, FOLLOW: not key, AT: None})
    if key:
        st.session_state[NOTE] = None
    else:
        st.session_state[SEAT] = store().join(
            code, "", seat=st.query_params.get("seat") or st.session_state.get(SEAT) or ""
        )


def join(code: str, nickname: str) -> None:
    """Join as a student (RoomError for a bad code or a full room) and keep it in the address."""
    seat = store().join(code, nickname)
    st.session_state.update({CODE: clean_code(code), KEY: None, SEAT: seat, FOLLOW: True, AT: None})
    keep_in_address()


def start(lecture: str) -> str:
    """Start a room as its lecturer, from a lecture's first step or ad hoc; projector mode on."""
    chosen = lectures().get(lecture)
    if chosen is None:
        code, key = store().create("Ad hoc")
    else:
        code, key = store().create(chosen.title, chosen.name, shared(chosen.steps[0]), len(chosen.steps))
        store().set_question(code, key, question_ref(chosen, 0))
        warm_from(chosen.name, 0)
    st.session_state.update({CODE: code, KEY: key, SEAT: None, FOLLOW: False, AT: None})
    st.session_state[projector.ON] = True  # the lecturer's screen is the projector's
    keep_in_address()
    return code


def leave() -> None:
    push.unfollow(code())
    for name in (CODE, KEY, SEAT, FOLLOW, AT, NOTE):
        st.session_state.pop(name, None)
    for name in PARAMS:
        st.query_params.pop(name, None)


def code() -> str:
    return st.session_state.get(CODE) or ""


def is_lecturer() -> bool:
    return bool(code() and st.session_state.get(KEY))


def address() -> dict[str, str]:
    """This session's room parameters, for a link or a page switch."""
    if not code():
        return {}
    if is_lecturer():
        return {"room": code(), "key": st.session_state[KEY]}
    return {"room": code(), "seat": st.session_state.get(SEAT) or ""}


def keep_in_address() -> None:
    for name, value in address().items():
        if st.query_params.get(name) != value:
            st.query_params[name] = value


def step_of(state: RoomState):
    """The lecture's step the room is on (with its talking points and question), if it has a lecture."""
    chosen = lectures().get(state.lecture)
    return chosen.steps[state.index] if chosen and 0 <= state.index < len(chosen.steps) else None


def go_to(step: dict) -> None:
    """Open a step's page with exactly its settings (this session's values of the page's settings dropped)."""
    settings = step.get("settings") or {}
    for name in [*links.shared_keys(page_settings(step["page"])), *settings]:
        st.session_state.pop(name, None)
    st.session_state[AT] = json.dumps(step, sort_keys=True)
    st.session_state[SWITCHING] = (step["page"], time.monotonic())
    params = {k: json.dumps(v) for k, v in settings.items()} | address() | projector.link_params()
    st.switch_page(step["page"], query_params=params)


def go_later(step: dict) -> None:
    """A callback: open the step at this run (a page switch cannot happen inside a callback)."""
    st.session_state[GO] = step


def move(state: RoomState, index: int) -> None:
    """A lecturer's button: the room moves to step ``index`` of its lecture, and so does the lecturer."""
    chosen = lectures().get(state.lecture)
    if not chosen or not 0 <= index < len(chosen.steps):
        return
    store().set_step(code(), st.session_state.get(KEY), index, shared(chosen.steps[index]))
    if chosen.steps[index].question:
        store().set_question(code(), st.session_state.get(KEY), question_ref(chosen, index))
    announce()
    warm_from(chosen.name, index)
    go_later(shared(chosen.steps[index]))


def announce() -> None:
    """The lecturer changed the room: its followers' bars rerun now, on every server."""
    push.announce(code(), store())


def warm_from(lecture: str, index: int) -> None:
    """Compute the step's page and the next one's on this server ahead of the class (once per server:
    the lecturer's move and the first follower on another replica both call it)."""
    chosen = lectures().get(lecture)
    if chosen:
        warmup.warm([shared(step) for step in chosen.steps[index : index + 2]])


def bring_here(page: str, title: str) -> None:
    """Ad hoc: the room moves to the lecturer's page with its current settings."""
    settings = {}
    for name, value in st.query_params.to_dict().items():
        if name not in (*PARAMS, projector.PARAM):
            try:
                settings[name] = json.loads(value)
            except ValueError:
                continue
    step = {"page": page, "settings": settings, "title": title}
    state = store().state(code())
    store().set_step(code(), st.session_state.get(KEY), state.index + 1, step)
    announce()
    st.session_state[AT] = json.dumps(step, sort_keys=True)


def mark_seen(code: str, seat: str) -> None:
    """Tell the store this follower is here, at most every SEEN_S: most polls then only read."""
    now = time.monotonic()
    if now - st.session_state.get(SEEN_AT, -SEEN_S) >= SEEN_S:
        store().seen(code, seat)
        st.session_state[SEEN_AT] = now


def switching_away(page_script: str) -> bool:
    """Whether this run is the old page's last one while a switch to another page is under way.

    A follower's fragment can still run on the page it leaves: seen there, it is not wandering.
    """
    page, when = st.session_state.get(SWITCHING) or (None, 0.0)
    if page is None or page == page_script or time.monotonic() - when > SWITCH_S:
        st.session_state.pop(SWITCHING, None)
        return False
    return True
