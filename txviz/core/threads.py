"""Run a block of torch work on a fixed number of threads, then restore the process's setting.

Every browser session runs in one process, and torch.set_num_threads changes the count every
thread started later gets. Saved and restored around a block without a lock, two sessions can
strand the server on one thread for good (A saves 2 and sets 1, B saves 1, A restores 2, B
restores 1), so blocks take turns here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_LOCK = threading.RLock()  # one block at a time changes the count; a thread may nest blocks


def process_threads() -> int:
    """The count a thread started now gets.

    Read in a new thread because OpenMP copies the count into each thread the first time it runs
    torch: a session thread that started during another session's block keeps that block's count,
    and restoring that would strand the server.
    """
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    reader.start()
    reader.join()
    return seen[0]


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch.set_num_threads(count) for the block; the process's count afterwards, even on error.

    Usable as a decorator.
    """
    with _LOCK:
        previous = process_threads()
        torch.set_num_threads(count)
        try:
            yield
        finally:
            torch.set_num_threads(previous)
