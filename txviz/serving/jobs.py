"""A bounded queue for heavy model passes: at most `max_jobs` run at once, the rest wait in order.

A trace of a long text or a whole corpus scored for head detectors takes seconds of both cores;
eight sessions starting one each would slow every one of them down together. The queue gates the
caller's own thread instead of handing the work to a pool of threads, so the pass keeps running in
the session's thread with its ContextVar (the capture settings) as it is. A waiting caller hears its
place at every poll; whatever it raises there (Streamlit stops a script when its session leaves or
reruns) takes it out of the queue. A session has one place at a time: a new request cancels its
older one still waiting. A request that a batch takes along (txviz.serving.batches) leaves the
queue with JobTaken: its result comes from the batch's pass.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

POLL_S = 0.25  # how often a waiting caller hears its place (and may be stopped)


class JobCancelled(Exception):
    """A waiting request was cancelled: its session left or asked for something newer."""


class JobTaken(Exception):
    """A waiting request was taken along by a batch that runs in another request's place."""


@dataclass(eq=False)
class _Ticket:
    owner: str
    number: int
    cancelled: threading.Event = field(default_factory=threading.Event)
    taken: threading.Event | None = None  # set by a batch that runs this request with its own


def waiting_message(ahead: int) -> str:
    """What a waiting session is told, e.g. '2 requests ahead of you.' (0: every slot is busy)."""
    if ahead <= 0:
        return "Your request is next: it starts when a running one finishes."
    return f"{ahead} request{'s' if ahead != 1 else ''} ahead of you."


class JobQueue:
    """At most max_jobs heavy passes at once, first come first served, shared by every session."""

    def __init__(self, max_jobs: int):
        self.max_jobs = max(1, int(max_jobs))
        self._changed = threading.Condition()
        self._waiting: list[_Ticket] = []
        self._running: set[_Ticket] = set()
        self._numbers = itertools.count()

    def load(self) -> tuple[int, int]:
        """(running, waiting) right now."""
        with self._changed:
            return len(self._running), len(self._waiting)

    def ahead(self, owner: str) -> int | None:
        """How many requests are ahead of this owner's waiting one; None when it has none waiting."""
        with self._changed:
            live = [t for t in self._waiting if not _gone(t)]
            for place, ticket in enumerate(live):
                if ticket.owner == owner:
                    return place
            return None

    def cancel(self, owner: str) -> None:
        """Take this owner's waiting request out of the queue (a running pass finishes)."""
        with self._changed:
            for ticket in self._waiting:
                if ticket.owner == owner:
                    ticket.cancelled.set()
            self._changed.notify_all()

    def wake(self) -> None:
        """Wake every waiting caller to look again (a batch took some of them along)."""
        with self._changed:
            self._changed.notify_all()

    @contextmanager
    def turn(
        self,
        owner: str = "",
        on_wait: Callable[[int], None] | None = None,
        poll_s: float = POLL_S,
        taken: threading.Event | None = None,
    ) -> Iterator[None]:
        """Wait for a free slot in arrival order, hold it for the block, then hand it on.

        ``on_wait(ahead)`` is called at every poll while waiting; raises JobCancelled when the
        request is cancelled before its turn, JobTaken when ``taken`` is set before it (call
        ``wake`` after setting it).
        """
        ticket = self._enqueue(owner, taken)
        try:
            self._wait(ticket, on_wait, poll_s)
        except BaseException:
            self._leave(ticket)
            raise
        try:
            yield
        finally:
            self._leave(ticket)

    def run(self, job: Callable[[], object], owner: str = "", on_wait=None, poll_s: float = POLL_S):
        """job() in its turn; its result."""
        with self.turn(owner, on_wait, poll_s):
            return job()

    def _enqueue(self, owner: str, taken: threading.Event | None = None) -> _Ticket:
        ticket = _Ticket(owner, next(self._numbers), taken=taken)
        with self._changed:
            if owner:  # one place per session: its older request is no longer wanted
                for other in self._waiting:
                    if other.owner == owner:
                        other.cancelled.set()
            self._waiting.append(ticket)
            self._changed.notify_all()
        return ticket

    def _wait(self, ticket: _Ticket, on_wait, poll_s: float) -> None:
        while True:
            with self._changed:
                self._waiting = [t for t in self._waiting if t is ticket or not _gone(t)]
                if ticket.taken is not None and ticket.taken.is_set():
                    raise JobTaken("A batch took this request along.")
                if ticket.cancelled.is_set():
                    raise JobCancelled("This request was replaced by a newer one or its session left.")
                ahead = self._waiting.index(ticket)
                if ahead == 0 and len(self._running) < self.max_jobs:
                    self._waiting.pop(0)
                    self._running.add(ticket)
                    self._changed.notify_all()  # the next in line may fit too
                    return
                if on_wait is None:
                    self._changed.wait(timeout=poll_s)
                    continue
            on_wait(ahead)  # outside the lock: the caller may render, or be stopped, here
            with self._changed:
                self._changed.wait(timeout=poll_s)

    def _leave(self, ticket: _Ticket) -> None:
        with self._changed:
            self._running.discard(ticket)
            if ticket in self._waiting:
                self._waiting.remove(ticket)
            self._changed.notify_all()


def _gone(ticket: _Ticket) -> bool:
    """Cancelled, or taken along by a batch: no longer waiting for a turn of its own."""
    return ticket.cancelled.is_set() or (ticket.taken is not None and ticket.taken.is_set())
