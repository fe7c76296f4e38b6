"""Pages: seconds to each page's first figure, from a fresh server (cold) and with the model loaded (warm).

Every page the app declares (its page map, `txviz.page_map`, not a list kept here) is opened headless with Streamlit's
AppTest in a fresh process of its own (`txviz.app.testing.page_timing`): the first run there is cold (imports,
model load, empty caches), a second session's run is warm. The goal is warm at most 3 s and cold at
most 15 s per page at a load average under 1; the machine's load is printed beside each page, as a
busy machine stretches every number. The last line names the slowest page of each.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

from txviz import page_map
from txviz.core import paths

log = logging.getLogger(__name__)

CHILD = "txviz.app.testing.page_timing"
GOAL_WARM_S = 3.0
GOAL_COLD_S = 15.0
SUMMARY = re.compile(
    r"^slowest first figure: warm (?P<warm>\d+\.\d\d) s \((?P<warm_page>[^)]*)\), "
    r"cold (?P<cold>\d+\.\d\d) s \((?P<cold_page>[^)]*)\)$"
)


@dataclass(frozen=True)
class PageTime:
    """One page's two openings: seconds to the first figure (the whole run where it draws none)."""

    page: str
    cold_s: float
    warm_s: float
    figure: bool  # False: the page drew no chart, the times are its whole runs
    load: float  # the one-minute load average when the page was opened
    errors: tuple[str, ...] = ()

    @property
    def meets_goal(self) -> bool:
        return self.warm_s <= GOAL_WARM_S and self.cold_s <= GOAL_COLD_S


def parse_child(output: str, load: float) -> PageTime:
    """The PageTime in the child's output: its last line that is a JSON object."""
    line = next(x for x in reversed(output.strip().splitlines()) if x.startswith("{"))
    data = json.loads(line)
    cold, warm = data["cold"], data["warm"]
    figure = cold["figure_s"] is not None and warm["figure_s"] is not None
    key = "figure_s" if figure else "run_s"
    return PageTime(data["page"], cold[key], warm[key], figure, load, tuple(cold["errors"] + warm["errors"]))


def row(time_: PageTime) -> str:
    goal = "yes" if time_.meets_goal else "no"
    note = "" if time_.figure else " (no figure: whole run)"
    if time_.errors:
        note += f" errors: {'; '.join(time_.errors)}"
    return f"| {time_.page} | {time_.load:.2f} | {time_.cold_s:.2f} | {time_.warm_s:.2f} | {goal}{note} |"


def summary(times: list[PageTime]) -> str:
    """`slowest first figure: warm X.XX s (page), cold Y.YY s (page)`."""
    warm = max(times, key=lambda t: t.warm_s)
    cold = max(times, key=lambda t: t.cold_s)
    return f"slowest first figure: warm {warm.warm_s:.2f} s ({warm.page}), cold {cold.cold_s:.2f} s ({cold.page})"


def parse_summary(line: str) -> dict[str, float | str]:
    """The summary line read back: warm, warm_page, cold, cold_page (seconds as floats)."""
    match = SUMMARY.match(line.strip())
    if not match:
        raise ValueError(f"not a summary line: {line!r}")
    found = match.groupdict()
    return {k: float(v) if k in ("warm", "cold") else v for k, v in found.items()}


def _child(*args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", CHILD, *args],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def declared_pages() -> list[str]:
    """The names of the pages the app declares (its page map), in its sidebar's order."""
    return [page.name for page in page_map.PAGES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench pages", description=__doc__)
    parser.add_argument("--pages", help="only these pages, by URL name, comma-separated (e.g. Tokenization)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds allowed per page, both runs")
    args = parser.parse_args(argv)
    pages = declared_pages()
    if args.pages:
        wanted = [p.strip() for p in args.pages.split(",") if p.strip()]
        unknown = [p for p in wanted if p not in pages]
        if unknown:
            print(
                f"error: no page {', '.join(unknown)}; the app declares {', '.join(pages)}", file=sys.stderr
            )
            return 2
        pages = wanted
    print(
        f"## Pages: seconds to the first figure (goal: warm <= {GOAL_WARM_S:g} s, cold <= {GOAL_COLD_S:g} s "
        "at load < 1)\n"
    )
    print(
        f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"on {os.cpu_count()} cores\n"
    )
    print("| page | load (1 min) | cold s | warm s | goal met |")
    print("|---|---|---|---|---|")
    times, failed, started = [], [], time.perf_counter()
    for page in pages:
        load = os.getloadavg()[0]
        try:
            done = _child(page, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            log.warning("page %s: past %s s", page, args.timeout)
            failed.append(page)
            print(f"| {page} | {load:.2f} | - | - | no (past {args.timeout:g} s) |", flush=True)
            continue
        if done.returncode or "{" not in done.stdout:
            log.warning("page %s: the timing run failed: %s", page, done.stderr[-2000:])
            failed.append(page)
            print(f"| {page} | {load:.2f} | - | - | no (failed) |", flush=True)
            continue
        times.append(parse_child(done.stdout, load))
        print(row(times[-1]), flush=True)
    print(
        f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    if failed:
        print(f"failed: {', '.join(failed)}")
    if not times:
        print("slowest first figure: none measured")
        return 1
    print(summary(times))
    return 1 if failed else 0
