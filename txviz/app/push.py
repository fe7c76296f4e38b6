"""Followers learn of a new step by push: this server's follower sessions by room, and the fragment rerun
the lecturer's move asks of each.

This is per-process session bookkeeping, not room state: the room itself lives in the store. A
follower's bar fragment registers its session here each time it runs (which fragment, on which page, with
which query string); a move reruns that fragment in every registered session on this server, so a
follower shows the new step at once instead of at its next poll. Across replicas the move is published on
the store (Redis) and each replica's one subscriber pushes to its own followers. Everything Streamlit-
internal sits in ``running_fragment`` and ``rerun_fragment``: if anything they use is missing or fails,
nothing is pushed and the poll still works.
"""

from __future__ import annotations

import functools
import threading
from typing import NamedTuple

from streamlit.runtime.scriptrunner import get_script_run_ctx


class Seat(NamedTuple):
    """Where a follower's bar fragment runs: enough to ask its session to rerun it."""

    fragment_id: str
    page_script_hash: str
    query_string: str


ONE_SHOT = ("trigger_value", "string_trigger_value", "json_trigger_value", "chat_input_value")
_LOCK = threading.Lock()
_ROOMS: dict[str, dict[str, Seat]] = {}  # room code -> {session id: its bar fragment}
_LISTENING: set[int] = set()  # ids of the stores this process listens to


def follow(code: str, store=None) -> bool:
    """Register the session whose fragment is running now as following ``code`` (from inside the
    fragment); with a shared store, make sure this process listens for the room's moves. False outside a
    fragment of a live session (an AppTest, a full run)."""
    here = running_fragment()
    if not (code and here):
        return False
    session_id, seat = here
    with _LOCK:
        _ROOMS.setdefault(code, {})[session_id] = seat
    if store is not None:
        listen(store)
    return True


def unfollow(code: str, session_id: str | None = None) -> None:
    """Forget a session (this one by default) in a room: it left."""
    if session_id is None:
        session_id = this_session()
    with _LOCK:
        seats = _ROOMS.get(code, {})
        seats.pop(session_id, None)
        if not seats:
            _ROOMS.pop(code, None)


def following(code: str) -> dict[str, Seat]:
    """This server's registered followers of a room."""
    with _LOCK:
        return dict(_ROOMS.get(code, {}))


def push_here(code: str) -> int:
    """Rerun the bar fragment of every follower of ``code`` on this server; sessions gone are forgotten.
    Returns how many were asked."""
    asked = 0
    for session_id, seat in following(code).items():
        done = rerun_fragment(session_id, seat)
        if done is False:
            unfollow(code, session_id)
        asked += bool(done)
    return asked


def announce(code: str, store) -> None:
    """The lecturer changed the room: every follower, on every replica, reruns its bar now.

    A shared store publishes (each replica's subscriber pushes to its own followers, this one's too);
    a store in this process's memory, or a publish that failed, pushes here directly.
    """
    try:
        published = bool(store.announce(code))
    except Exception:  # Redis down: this server's followers still hear of it
        published = False
    if not published:
        push_here(code)


def listen(store) -> None:
    """Once per process and store: hear of moves published by other replicas (a no-op in memory)."""
    with _LOCK:
        if id(store) in _LISTENING:
            return
        _LISTENING.add(id(store))
    try:
        store.listen(push_here)
    except Exception:  # no subscriber: the poll still brings the step
        with _LOCK:
            _LISTENING.discard(id(store))


def this_session() -> str | None:
    """The id of the session whose script runs in this thread."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx else None


def running_fragment() -> tuple[str, Seat] | None:
    """(session id, Seat) of the fragment running now in this thread; None outside a fragment or a
    session. Streamlit keeps the running fragment's id in its per-thread state (older versions: on the
    script-run context)."""
    try:
        ctx = get_script_run_ctx(suppress_warning=True)
        if ctx is None:
            return None
        try:
            from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

            fragment_id = ThreadState.get().fragment_id
        except ImportError:
            fragment_id = getattr(ctx, "current_fragment_id", None)
        if not fragment_id:
            return None
        return ctx.session_id, Seat(fragment_id, ctx.page_script_hash or "", ctx.query_string or "")
    except Exception:
        return None


def rerun_fragment(session_id: str, seat: Seat) -> bool | None:
    """Ask a live session to rerun one fragment, as its browser's timer would (on the session's event
    loop, the way Streamlit's run-on-save reruns a session). True: asked; False: the session is gone;
    None: this Streamlit has no way to do it here (no server running, an internal renamed)."""
    try:
        from streamlit.proto.ClientState_pb2 import ClientState
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return None
        session = Runtime.instance().get_app_session(session_id)
        if session is None:
            return False
        state = ClientState(
            fragment_id=seat.fragment_id,
            page_script_hash=seat.page_script_hash,
            query_string=seat.query_string,
            is_auto_rerun=True,  # a fragment gone by then (the page switched) is dropped quietly
        )
        last = session._client_state  # the browser's last request: its context (st.context.url) and widgets
        if last.HasField("context_info"):
            state.context_info.CopyFrom(last.context_info)
        # The widgets' last values, so a push that coalesces with a run the browser has just asked for
        # keeps what the student chose; one-shot triggers (a click) are left out, or it would fire again.
        state.widget_states.widgets.extend(
            w for w in last.widget_states.widgets if w.WhichOneof("value") not in ONE_SHOT
        )
        session._call_soon_on_event_loop(functools.partial(session.request_rerun, state))
        return True
    except Exception:
        return None
