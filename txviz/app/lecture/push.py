"""Followers learn of a new step by push: this server's follower sessions by room, and the fragment rerun
the lecturer's move asks of each.

This is per-process session bookkeeping, not room state: the room itself lives in the store. A
follower's bar fragment registers its session here each time it runs (which fragment, on which page, with
which query string); a move reruns that fragment in every registered session on this server, so a
follower shows the new step at once instead of at its next poll. Across replicas the move is published on
the store (Redis) and each replica's one subscriber pushes to its own followers. What a push needs of
Streamlit's internals goes through ``txviz.app.streamlit_private``: where that is off or lacking, nothing
registers, nothing is pushed, and the poll still brings the step.
"""

from __future__ import annotations

import logging
import threading
from typing import NamedTuple

from txviz.app import streamlit_private

log = logging.getLogger(__name__)


class Seat(NamedTuple):
    """Where a follower's bar fragment runs: enough to ask its session to rerun it."""

    fragment_id: str
    page_script_hash: str
    query_string: str


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
    asked, failed, error = 0, 0, None
    for session_id, seat in following(code).items():
        try:
            done = rerun_fragment(session_id, seat)
        except Exception as caught:  # one session's failure must not stop the others' push
            log.debug("Room %s: a push to one follower failed", code, exc_info=True)  # warned once below
            done, failed, error = None, failed + 1, caught
        if done is False:
            unfollow(code, session_id)
        asked += bool(done)
    if failed:
        log.warning("Room %s: %d of its pushes failed; those followers learn of the change by their poll",
                    code, failed, exc_info=error)  # fmt: skip
    return asked


def announce(code: str, store) -> None:
    """The lecturer changed the room: every follower, on every replica, reruns its bar now.

    A shared store publishes (each replica's subscriber pushes to its own followers, this one's too);
    a store in this process's memory, or a publish that failed, pushes here directly.
    """
    try:
        published = bool(store.announce(code))
    except Exception:  # Redis down: this server's followers still hear of it
        log.warning("Room %s: publishing the change failed; pushing to this server's followers only", code,
                    exc_info=True)  # fmt: skip
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
        log.warning("Listening for other replicas' room changes failed; their followers here learn of them by "
                    "their poll (tried again with the next follower)", exc_info=True)  # fmt: skip
        with _LOCK:
            _LISTENING.discard(id(store))


def this_session() -> str | None:
    """The id of the session whose script runs in this thread."""
    return streamlit_private.this_session()


def running_fragment() -> tuple[str, Seat] | None:
    """(session id, Seat) of the fragment running now in this thread; None outside a fragment or a
    session, or where the adapter is off."""
    here = streamlit_private.running_fragment()
    if here is None:
        return None
    session_id, fragment_id, page_script_hash, query_string = here
    return session_id, Seat(fragment_id, page_script_hash, query_string)


def rerun_fragment(session_id: str, seat: Seat) -> bool | None:
    """Ask a live session to rerun one fragment, as its browser's timer would. True: asked; False: the
    session is gone; None: no way to do it here (no server running, the adapter off)."""
    return streamlit_private.rerun_fragment(
        session_id, seat.fragment_id, seat.page_script_hash, seat.query_string
    )
