"""Run a block of torch work on a fixed number of threads, then restore the previous setting."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_LOCK = threading.RLock()  # the thread count is process-wide: one measurement at a time changes it


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch.set_num_threads(count) for the block; the previous value afterwards, even on error."""
    with _LOCK:
        previous = torch.get_num_threads()
        torch.set_num_threads(count)
        try:
            yield
        finally:
            torch.set_num_threads(previous)
