"""Time to a page's first figure, headless: the child process `python -m txviz bench pages` starts.

`python -m txviz.app.testing.page_timing --list` prints the pages the app declares (the page map, in the
sidebar's order, one name and script a line); `python -m txviz.app.testing.page_timing NAME` opens that page twice with
Streamlit's AppTest in this fresh process and prints one JSON line: cold (the first run, imports,
model load and every cache empty, as on a fresh server) and warm (a second session, the model and the
caches filled). A figure is first drawn when `projector.draw` (every chart goes through it) is first
called; a page that draws none reports its whole run instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from streamlit.testing.v1 import AppTest

from txviz import logs, page_map
from txviz.app import projector

log = logging.getLogger(__name__)

TIMEOUT_S = 900  # one run of the slowest page on a busy machine, well past the goals


def declared() -> list[tuple[str, str]]:
    """(name, script path) of every page of the page map, in the sidebar's order."""
    return [(page.name, str(page.path)) for page in page_map.PAGES]


def _open(script: str) -> dict:
    """One AppTest run of the script: seconds to the first figure (or None), to the end, and its errors."""
    first: list[float] = []
    draw = projector.draw

    def timed_draw(*args, **kwargs):
        if not first:
            first.append(time.perf_counter())
        return draw(*args, **kwargs)

    projector.draw = timed_draw
    try:
        start = time.perf_counter()
        at = AppTest.from_file(script, default_timeout=TIMEOUT_S).run()
        end = time.perf_counter()
    finally:
        projector.draw = draw
    return {
        "figure_s": first[0] - start if first else None,
        "run_s": end - start,
        "errors": [str(e.value)[:200] for e in [*at.exception, *at.error]],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz.app.testing.page_timing", description=__doc__)
    parser.add_argument("page", nargs="?", help="a page's URL name, as --list prints it")
    parser.add_argument("--list", action="store_true", help="print the pages the app declares")
    args = parser.parse_args(argv)
    logs.configure()
    pages = dict(declared())
    if args.list or not args.page:
        for name, script in pages.items():
            print(f"{name}\t{script}")
        return 0
    if args.page not in pages:
        print(f"error: no page {args.page!r}; the app declares {', '.join(pages)}", file=sys.stderr)
        return 2
    cold = _open(pages[args.page])
    warm = _open(pages[args.page])
    print(json.dumps({"page": args.page, "cold": cold, "warm": warm}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
