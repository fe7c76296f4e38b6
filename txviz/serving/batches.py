"""Heavy passes that share one forward: compatible requests of one key ride together in one queue place.

Eight sessions' traces of texts of similar length cost far less as one padded forward than as eight
passes fighting over two cores. Every request still takes its own place in the JobQueue, so it hears
its place while it waits and leaves when its session does. The first request whose turn comes takes
along the compatible requests of its key that are not running yet (still waiting, or about to start
in a place of their own); they leave the queue and get their own result from its pass. A request
that arrives while the queue is busy waits a short gather window in its place first, so requests
arriving together form one batch; a lone request starts at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from txviz.core import config, tracing
from txviz.core.errors import UserError
from txviz.core.loaded import LoadedModel
from txviz.core.trace import AttentionTrace
from txviz.serving.jobs import POLL_S, JobQueue, JobTaken

log = logging.getLogger(__name__)

GATHER_S = 0.03  # how long a request arriving at a busy queue waits for others to ride along
MAX_ROWS = 8  # rows of one batched trace (the server's max_batch where it has one)
LENGTH_RATIO = 1.5  # a batch's longest text at most this many times its shortest: padding wastes little


@dataclass(eq=False)
class _Request:
    key: Hashable
    item: Any
    taken: threading.Event = field(default_factory=threading.Event)  # a batch runs it along
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False  # its session left before its pass: a batch drops it
    result: Any = None
    error: BaseException | None = None


class Batcher:
    """Batches of compatible requests, each batch one pass in one place of ``queue``."""

    def __init__(self, queue: JobQueue, gather_s: float = GATHER_S):
        self.queue = queue
        self.gather_s = gather_s
        self._lock = threading.Lock()
        self._open: dict[Hashable, list[_Request]] = {}  # requests not running yet, in arrival order
        self.batches_run = 0  # passes that served more than one request (tests and the benchmark read it)
        self.largest_batch = 0

    def run(
        self,
        key: Hashable,
        item: Any,
        run_batch: Callable[[list[Any]], Sequence[Any]],
        fits: Callable[[list[Any]], bool] | None = None,
        owner: str = "",
        on_wait: Callable[[int], None] | None = None,
        poll_s: float = POLL_S,
    ) -> Any:
        """This item's result of ``run_batch(items)``, run with the other items of ``key`` that ``fits`` allows.

        Requests share a key only when one pass can serve them all (same model, same settings);
        ``run_batch`` returns one result per item in order. ``on_wait`` and JobCancelled as in
        JobQueue.turn.
        """
        request = _Request(key, item)
        busy = self.queue.load() != (0, 0)
        with self._lock:
            self._open.setdefault(key, []).append(request)
        try:
            with self.queue.turn(owner, on_wait, poll_s, taken=request.taken):
                if busy:
                    time.sleep(self.gather_s)
                rows = self._take(request, fits)
                if rows:
                    self._execute(rows, run_batch)
        except JobTaken:
            pass
        except BaseException:
            self._withdraw(request)
            raise
        request.done.wait()  # set by whichever pass took this request, whatever happened there
        if request.error is not None:
            raise request.error
        return request.result

    def _take(self, request: _Request, fits) -> list[_Request]:
        """This request and the waiting ones of its key that fit with it; [] when another batch took it."""
        with self._lock:
            if request.taken.is_set():
                return []
            waiting = self._open[request.key]
            waiting.remove(request)
            rows = [request]
            for other in list(waiting):
                if fits is None or fits([r.item for r in rows + [other]]):
                    waiting.remove(other)
                    other.taken.set()
                    rows.append(other)
            if not waiting:
                del self._open[request.key]
        if len(rows) > 1:
            self.queue.wake()  # the rows taken along leave their places in the queue now
        return rows

    def _withdraw(self, request: _Request) -> None:
        """A request whose session left: out of the open list, or dropped by the batch that took it."""
        with self._lock:
            request.cancelled = True
            waiting = self._open.get(request.key, [])
            if request in waiting:
                waiting.remove(request)
                if not waiting:
                    del self._open[request.key]

    def _execute(self, rows: list[_Request], run_batch) -> None:
        """One pass for every row still wanted; each row gets its own result or error."""
        try:
            live = [r for r in rows if not r.cancelled]  # a session that left is dropped before the pass
            for row, result in zip(live, self._results(live, run_batch), strict=True):
                if isinstance(result, _Failed):
                    row.error = result.error
                else:
                    row.result = result
        except BaseException:  # the pass itself was stopped: no row may wait for ever
            for row in rows:
                if row.result is None and row.error is None:
                    row.error = RuntimeError("The shared pass stopped: run it again.")
            raise
        finally:
            for row in rows:
                row.done.set()

    def _results(self, live: list[_Request], run_batch) -> list[Any]:
        if len(live) <= 1:
            return [_alone(run_batch, r.item) for r in live]
        try:
            results = list(run_batch([r.item for r in live]))
        except Exception as error:  # one bad row must not fail the others: each runs alone, keeping its error
            # A user's bad row is routine; any other failure of the shared pass is a bug worth its traceback.
            level = logging.DEBUG if isinstance(error, UserError) else logging.WARNING
            log.log(level, "a batched pass of %d rows failed; each row runs alone", len(live), exc_info=True)
            return [_alone(run_batch, r.item) for r in live]
        self.batches_run += 1
        self.largest_batch = max(self.largest_batch, len(live))
        return results


@dataclass(frozen=True)
class _Failed:
    error: Exception


def _alone(run_batch, item) -> Any:
    try:
        return run_batch([item])[0]
    except Exception as error:
        # Debug only: the requesting session raises it, where Streamlit logs it (or shows a user error).
        log.debug("a row failed alone", exc_info=True)
        return _Failed(error)


def trace(
    batcher: Batcher,
    loaded: LoadedModel,
    text: str,
    record: tuple[str, ...] = ("weights",),
    owner: str = "",
    on_wait: Callable[[int], None] | None = None,
    max_rows: int = MAX_ROWS,
) -> AttentionTrace:
    """``trace_text(loaded, text, record=record)``, run in one pass with other sessions' texts of similar length."""
    record = tuple(sorted(record))
    budget_mb = config.active().trace_memory_mb
    # Tokenised here, in the session's own thread: a text that is empty or too large fails alone.
    encoded = tracing.prepare(loaded, text, record=record, budget_mb=budget_mb)

    def fits(items: list[tracing.Encoded]) -> bool:
        lengths = [len(e.ids) for e in items]
        padded_bytes = len(items) * tracing.trace_bytes(loaded, max(lengths), record)
        return (
            len(items) <= max_rows
            and max(lengths) <= LENGTH_RATIO * min(lengths)
            and padded_bytes <= budget_mb * 2**20
        )

    return batcher.run(
        (id(loaded), record),  # the waiting session holds loaded, so its id names one model meanwhile
        encoded,
        lambda items: tracing.traces(loaded, items, record=record),
        fits,
        owner,
        on_wait,
    )
