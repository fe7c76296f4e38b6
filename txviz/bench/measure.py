"""Measuring a call: best wall and CPU time of repeats, and the peak memory it added (Linux)."""

from __future__ import annotations

import ctypes
import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def _read_rss() -> tuple[int, int]:
    """Resident and peak resident bytes of this process (Linux)."""
    status = Path("/proc/self/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) * 1024
    peak = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) * 1024
    return rss, peak


@functools.cache
def track_large_allocations() -> bool:
    """Make glibc hand every allocation over 64 KiB back to the OS when freed (call once).

    Otherwise freed tensors stay in malloc's pools, later ones reuse them, and the peak RSS of a
    call reads as zero. Process-wide and slightly slower, so only benchmarks turn it on.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(libc.mallopt(m_mmap_threshold, 64 * 1024) and libc.mallopt(m_trim_threshold, 0))


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS counter; False where the OS does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


@dataclass(frozen=True)
class Measurement:
    """Best wall and CPU time of a call, and the most memory it added above what was resident."""

    seconds: float  # wall clock
    cpu_seconds: float  # CPU time of the whole process: steadier than wall time on a shared machine
    peak_bytes: int | None  # None where peak memory cannot be read (not Linux)


def measure(fn: Callable[[], object], repeats: int = 1) -> Measurement:
    """Time fn and its peak added memory, each the best of repeats."""
    wall, cpu, peak = float("inf"), float("inf"), None
    for _ in range(max(1, repeats)):
        can_peak = _reset_peak()
        before, _ = _read_rss() if can_peak else (0, 0)
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
        if can_peak:
            # The smallest of the repeats: one-off lazy allocations are not the call's footprint.
            added = _read_rss()[1] - before
            peak = added if peak is None else min(peak, added)
    return Measurement(wall, cpu, peak)
