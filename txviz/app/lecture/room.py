"""Being in a lecture room: who this session is (the lecturer, the projector window or a student), the
room bar every page shows, and following the lecturer's step.

The address carries only the room's code (``room=CODE``, and ``screen=projector`` for the projector
window): it is on the projector for everyone to read. The lecturer's key and a student's seat live in the
session and in this browser's cookies (txviz.app.lecture.room_cookies), so a reload or a second tab of the same
browser keeps its part, and a copied link joins as a new student. The key enters a session once: from
starting the room, or from a one-time resume link (``resume=TICKET``, removed from the address at once).

A follower's bar is a fragment that reads only the store: the lecturer's change pushes it to rerun at once
(txviz.app.lecture.push), and it polls every POLL_S as a safety net. An idle follower never reruns its page, so
it never repeats the page's model work.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time

import streamlit as st

from txviz import page_map
from txviz.app import caching, links, projector
from txviz.app.lecture import push, room_cookies, warmup
from txviz.app.lecture.room_lectures import lectures, page_settings, question_ref
from txviz.lecture.rooms import NotLecturer, RoomError, RoomStore, UnknownRoom, clean_code, open_store
from txviz.lecture.rooms.base import JOIN_TRIES, KEY_TRIES, RoomState
from txviz.lecture.rooms.qr import qr_png
from txviz.lecture.steps import Step

log = logging.getLogger(__name__)

# A follower's fragment reruns when the lecturer moves (a push), and reads the store this often besides,
# in case a push was lost. Each poll is a fragment rerun (3-4 ms of server CPU; `bench lecture`).
POLL_S = float(os.environ.get("TXVIZ_ROOM_POLL_S", "10.0"))
TALLY_S = 2.0  # the lecturer's followers count and tally: one session, answers show within this
CODE, KEY, SEAT, SCREEN = "_room_code", "_room_key", "_room_seat", "_room_screen"
FOLLOW, AT, NOTE, GO = "_room_follow", "_room_at", "_room_note", "_room_go_to"
TELL = "_room_tell_after_run"  # (lecture, step) the console announces once it has drawn
TELL_AFTER_S = 0.3  # the console's run has ended; its browser gets its last messages first
RESUME_SHOWN = "_room_resume_link"  # a resume link made this run, shown once
LEFT = "_room_left_because"  # why the session left its room (closed, expired), said until it joins again
SWITCHING = "_room_switching"  # (page, when) of a switch this session started and has not yet arrived at
SWITCH_S = 10.0  # after this long a switch that never arrived no longer counts
SEEN_AT = "_room_seen_at"
SEEN_S = 3.0  # a follower tells the store it is there at most this often (FOLLOWING_S counts it meanwhile)
PARAMS = ("room", "screen")  # what the address keeps of membership; copied view links leave them out
SECRETS = ("key", "seat", "resume")  # never kept in an address: an old link's are dropped on arrival
PROJECTOR_SCREEN = "projector"  # screen=projector: the window the projector shows, holding no key
ROOM_PAGE = "Lecture_Room"  # the presenter's console, by its name in the page map


@st.cache_resource(show_spinner=False)
def store() -> RoomStore:
    """The server's one room store (Redis when TXVIZ_REDIS_URL is set)."""
    return open_store()


def client() -> str:
    """Who tries a code or a key, for rate limits: the address our proxy saw, else the socket's peer."""
    forwarded = str((st.context.headers or {}).get("X-Forwarded-For") or "")
    return forwarded.split(",")[-1].strip() or st.context.ip_address or "local"


def from_address() -> None:
    """Enter the room the address names: as its lecturer (a resume link, or this browser's key), as the
    projector window, or as a student in this browser's seat (a new seat for a new browser)."""
    code = clean_code(st.query_params.get("room"))
    ticket = st.query_params.get("resume") or ""
    for name in SECRETS:  # whatever happens next, a secret does not stay in the address bar
        st.query_params.pop(name, None)
    if not code or (code == st.session_state.get(CODE) and not ticket):
        return
    if ticket:
        _resume(code, ticket)
        return
    if st.query_params.get("screen") == PROJECTOR_SCREEN:
        _enter(code, screen=PROJECTOR_SCREEN)
        st.session_state[projector.ON] = True  # its link says present=true too: this keeps it on
        return
    key = _browser_key(code)
    if key:
        _enter(code, key=key)
    else:
        _enter(code, seat=_join(code, "", seat=room_cookies.read(room_cookies.seat_name(code))))


def _enter(code: str, key: str | None = None, seat: str | None = None, screen: str = "") -> None:
    st.session_state.update({CODE: code, KEY: key, SEAT: seat, SCREEN: screen, FOLLOW: not key, AT: None})
    st.session_state.pop(NOTE, None)
    st.session_state.pop(LEFT, None)  # a room left before is old news


def limited(buckets: list[str], tries: tuple[int, float], attempt):
    """``attempt()``, refused before it runs once a bucket has too many failures (TooManyTries); only a
    failed attempt counts, so a class behind one address joins freely while guessing stops."""
    for bucket in buckets:
        store().throttle(bucket, *tries, count=False)
    try:
        return attempt()
    except (NotLecturer, UnknownRoom):
        for bucket in buckets:
            store().throttle(bucket, *tries)
        raise


def _browser_key(code: str) -> str:
    """This browser's key for the room, if it is the room's (a stale or forged one is dropped)."""
    key = room_cookies.read(room_cookies.key_name(code))
    if not key:
        return ""
    try:
        limited([f"key:{client()}", f"key:{code}"], KEY_TRIES, lambda: store().check(code, key))
    except NotLecturer:
        log.warning("room %s: a browser's lecturer cookie is not the room's key", code)
        room_cookies.forget(room_cookies.key_name(code))
        return ""
    return key


def _resume(code: str, ticket: str) -> None:
    """A resume link: the key enters this session once, and the ticket is spent (it never works again)."""
    try:
        key = limited([f"key:{client()}", f"key:{code}"], KEY_TRIES, lambda: store().redeem(code, ticket))
    except NotLecturer:
        log.warning("room %s: a resume link was refused (wrong or used already)", code)
        st.session_state[NOTE] = (
            "This resume link does not work: it works once, and it was used already or is wrong. "
            "Join as a student with the room's code, or ask the lecturer for a new one."
        )
        st.query_params.pop("room", None)
        return
    log.info("room %s: the lecturer resumed from a resume link", code)
    _enter(code, key=key)


def _join(code: str, nickname: str, seat: str = "") -> str:
    """A seat in the room (this browser's, when it has one there); a failed code counts against the client."""
    return limited([f"join:{client()}"], JOIN_TRIES, lambda: store().join(code, nickname, seat=seat))


def join(code: str, nickname: str) -> None:
    """Join as a student (RoomError for a bad code or a full room) and keep the code in the address."""
    seat = _join(code, nickname, seat=room_cookies.read(room_cookies.seat_name(clean_code(code))))
    _enter(clean_code(code), seat=seat)
    keep_in_address()


def start(lecture: str) -> str:
    """Start a room as its lecturer, from a lecture's first step or ad hoc; this window is the presenter's."""
    chosen = lectures().get(lecture)
    if chosen is None:
        code, key = store().create("Ad hoc")
    else:
        code, key = store().create(chosen.title, chosen.name, chosen.steps[0].shared(), len(chosen.steps))
        store().set_question(code, key, question_ref(chosen, 0))
        warm_from(chosen.name, 0)
    _enter(code, key=key)
    log.info("room %s started (%s)", code, chosen.name if chosen else "ad hoc")
    keep_in_address()
    return code


def present_here() -> None:
    """A callback: one screen for everything: this window goes to projector mode and the room's step."""
    projector.choose(True)
    state = store().state(code())
    if state.step:
        go_later(Step.from_shared(state.step))


def make_resume_link() -> None:
    """A callback: a new one-time resume link (an earlier one stops working), shown once on this screen."""
    st.session_state[RESUME_SHOWN] = store().resume_ticket(code(), st.session_state.get(KEY))


def keep_credentials() -> None:
    """This browser keeps the session's key or seat for the room (a reload, a second tab)."""
    if not code():
        return
    if is_lecturer():
        room_cookies.keep(room_cookies.key_name(code()), st.session_state[KEY])
    elif st.session_state.get(SEAT):
        room_cookies.keep(room_cookies.seat_name(code()), st.session_state[SEAT])


def leave() -> None:
    """This session leaves the room (a student stops counting as following; the seat stays theirs)."""
    left, seat = code(), st.session_state.get(SEAT)
    push.unfollow(left)
    if left and seat:
        try:
            store().leave(left, seat)
        except RoomError:
            log.info("room %s: leaving a room that is gone", left)
    if left and is_lecturer():
        room_cookies.forget(room_cookies.key_name(left))
    for name in (CODE, KEY, SEAT, SCREEN, FOLLOW, AT, NOTE):
        st.session_state.pop(name, None)
    for name in PARAMS:
        st.query_params.pop(name, None)


def code() -> str:
    return st.session_state.get(CODE) or ""


def is_lecturer() -> bool:
    return bool(code() and st.session_state.get(KEY))


def is_projector() -> bool:
    """This window is the room's projector: it follows every step, answers nothing, holds no key."""
    return bool(code() and st.session_state.get(SCREEN) == PROJECTOR_SCREEN and not is_lecturer())


def address() -> dict[str, str]:
    """This session's room parameters, for a link or a page switch: the code, never a key or a seat."""
    if not code():
        return {}
    return {"room": code()} | ({"screen": PROJECTOR_SCREEN} if is_projector() else {})


def page_address(page: str = "Lecture_Room") -> str:
    """A page of this server as the browser reaches it (the current address's base, not its page)."""
    here = (st.context.url or "").split("?")[0].rstrip("/")
    scheme, _, rest = here.partition("//")
    base = f"{scheme}//{rest.rsplit('/', 1)[0]}" if "/" in rest else here
    return f"{base}/{page}"


def join_url() -> str:
    """The address students open: the Lecture Room with the room's code (never a key or a seat)."""
    return f"{page_address()}?room={code()}"


@caching.cached_data(max_entries=16)
def join_qr(url: str) -> bytes:
    """The join URL's QR code, made once per URL (the projector's bar redraws it on every poll)."""
    return qr_png(url)


def projector_url() -> str:
    """The projector window's address: the room's code and the projector screen, never the key."""
    return f"{join_url()}&screen={PROJECTOR_SCREEN}&{projector.PARAM}=true"


def keep_in_address() -> None:
    for name, value in address().items():
        if st.query_params.get(name) != value:
            st.query_params[name] = value


def step_of(state: RoomState):
    """The lecture's step the room is on (with its talking points and question), if it has a lecture."""
    chosen = lectures().get(state.lecture)
    return chosen.steps[state.index] if chosen and 0 <= state.index < len(chosen.steps) else None


def go_to(step: Step) -> None:
    """Open a step's page with exactly its settings (this session's values of the page's settings dropped)."""
    for name in [*links.shared_keys(page_settings(step.page)), *step.settings]:
        st.session_state.pop(name, None)
    st.session_state[AT] = step.key
    st.session_state[SWITCHING] = (step.page, time.monotonic())
    params = step.query_params() | address() | projector.link_params()
    st.switch_page(page_map.page(step.page).file, query_params=params)


def go_later(step: Step) -> None:
    """A callback: open the step at this run (a page switch cannot happen inside a callback)."""
    st.session_state[GO] = step


def move(state: RoomState, index: int, follow: bool = True) -> None:
    """A lecturer's button: the room moves to step ``index`` of its lecture; the lecturer's window too
    when ``follow`` (presenting in one window), else it stays on the presenter's console."""
    chosen = lectures().get(state.lecture)
    if not chosen or not 0 <= index < len(chosen.steps):
        return
    store().set_step(code(), st.session_state.get(KEY), index, chosen.steps[index].shared())
    if chosen.steps[index].question:
        store().set_question(code(), st.session_state.get(KEY), question_ref(chosen, index))
    if follow:
        announce()
        warm_from(chosen.name, index)
        go_later(chosen.steps[index])
    else:
        announce_after_run(chosen.name, index)


def announce() -> None:
    """The lecturer changed the room: its followers' bars rerun now, on every server."""
    push.announce(code(), store())


def announce_after_run(lecture: str = "", index: int = -1) -> None:
    """Tell the class (and warm the step ahead) once the console has drawn this run: its redraw costs the
    server ~20-50 ms of CPU but, announced first, waits behind thirty followers' page runs in the same
    process (`bench lecture`'s profile of a Next)."""
    st.session_state[TELL] = (lecture, index)


def tell_class() -> threading.Timer | None:
    """The announcement a console run put off (announce_after_run), TELL_AFTER_S after the end of that
    run: the console's last messages reach its browser before thirty page runs take the CPU."""
    told = st.session_state.pop(TELL, None)
    if told is None:
        return None
    room_code, shared_store = code(), store()
    steps = steps_ahead(*told)
    base = warmup.own_address() if steps and st.context.url else None  # no server of its own in an AppTest

    def tell() -> None:
        push.announce(room_code, shared_store)
        if base:
            warmup.warm(steps, base=base)

    timer = threading.Timer(TELL_AFTER_S, tell)
    timer.daemon = True
    timer.start()
    return timer


def steps_ahead(lecture: str, index: int) -> list[Step]:
    """Step ``index`` of a lecture and the one after (none for ad hoc)."""
    chosen = lectures().get(lecture)
    return list(chosen.steps[index : index + 2]) if chosen else []


def warm_from(lecture: str, index: int) -> None:
    """Compute the step's page and the next one's on this server ahead of the class (once per server:
    the lecturer's move and the first follower on another replica both call it)."""
    steps = steps_ahead(lecture, index)
    if steps:
        warmup.warm(steps)


def bring_here(page: str, title: str) -> None:
    """Ad hoc: the room moves to the lecturer's page with its current settings."""
    settings = {}
    for name, value in st.query_params.to_dict().items():
        if name not in (*PARAMS, *SECRETS, projector.PARAM):
            try:
                settings[name] = json.loads(value)
            except ValueError:
                continue
    step = Step(page, settings, title=title)
    state = store().state(code())
    store().set_step(code(), st.session_state.get(KEY), state.index + 1, step.shared())
    announce()
    st.session_state[AT] = step.key


def mark_seen(code: str, seat: str) -> None:
    """Tell the store this follower is here, at most every SEEN_S: most polls then only read."""
    now = time.monotonic()
    if now - st.session_state.get(SEEN_AT, -SEEN_S) >= SEEN_S:
        store().seen(code, seat)
        st.session_state[SEEN_AT] = now


def switching_away(page: str) -> bool:
    """Whether this run is the old page's last one while a switch to another page is under way.

    A follower's fragment can still run on the page it leaves: seen there, it is not wandering.
    """
    going, when = st.session_state.get(SWITCHING) or (None, 0.0)
    if going is None or going == page or time.monotonic() - when > SWITCH_S:
        st.session_state.pop(SWITCHING, None)
        return False
    return True
