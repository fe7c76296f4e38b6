"""`python -m txviz bench pages --pages Course_Map`: one page opened cold and warm, its output read back
(what it measured is not asserted: the machine's load decides that)."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

from txviz.bench import pages


def test_one_page_is_opened_and_the_last_line_names_it():
    done = subprocess.run(
        [sys.executable, "-m", "txviz", "bench", "pages", "--pages", "Course_Map"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert any(line.startswith("load average at the start: ") for line in lines)
    assert sum(line.startswith("| Course_Map |") for line in lines) == 1
    last = pages.parse_summary(lines[-1])
    assert last["warm_page"] == last["cold_page"] == "Course_Map"
