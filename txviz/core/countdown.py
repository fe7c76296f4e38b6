"""Progress of a long computation in equal steps, told with the time left (from the pace so far)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

Progress = Callable[[float, str], None]


def remaining(done: int, total: int, elapsed: float) -> str:
    """'about 40 s left' from the pace of the steps done so far; an estimate is promised before the first."""
    if not done:
        return "estimating the time left"
    left = elapsed / done * max(0, total - done)
    return f"about {left / 60:.0f} min left" if left >= 90 else f"about {left:.0f} s left"


class Countdown:
    """Calls ``progress(fraction, "label: i of n; about t s left")`` as each of ``total`` steps ends."""

    def __init__(self, total: int, progress: Progress | None, label: str) -> None:
        self.total, self.progress, self.label = max(1, total), progress, label
        self.done, self.start = 0, time.perf_counter()
        self._tell()

    def _tell(self) -> None:
        if self.progress:
            left = remaining(self.done, self.total, time.perf_counter() - self.start)
            self.progress(
                min(self.done / self.total, 1.0), f"{self.label}: {self.done} of {self.total}; {left}"
            )

    def step(self, *_: object) -> None:
        """One step done (any arguments, so it can stand for a callback of its own shape)."""
        self.advance(1)

    def advance(self, steps: int) -> None:
        """``steps`` steps done at once (a part of the work that costs several)."""
        self.done += steps
        self._tell()


def on_stderr(width: int = 72) -> Progress:
    """Progress for a command line: one line on stderr, rewritten in place."""

    def tell(fraction: float, message: str) -> None:
        print(f"\r{fraction:6.1%}  {message}".ljust(width), end="", file=sys.stderr, flush=True)

    return tell
