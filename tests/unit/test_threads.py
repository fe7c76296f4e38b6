"""The process-wide torch thread count survives concurrent sessions changing it."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest
import torch

from txviz.core.threads import torch_threads

ROOT = Path(__file__).resolve().parents[2]


def session_count() -> int:
    """The thread count a new session's thread sees (the main thread keeps its own OpenMP copy)."""
    seen = []
    reader = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    reader.start()
    reader.join()
    return seen[0]


@pytest.fixture
def two_threads():
    """Start from 2 threads, so a count stranded at 1 shows; the old count afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(before)


def overlap(first, second) -> None:
    """Run two blocks in two threads so that the second enters before the first leaves, if it can."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    errors = []

    def a():
        try:
            with first():
                a_in.set()
                b_in.wait(0.5)  # a helper that makes B wait lets A leave after this
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)
        a_out.set()

    def b():
        a_in.wait(5)
        try:
            with second():
                b_in.set()
                a_out.wait(0.5)
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors


def test_overlapping_blocks_restore_the_count(two_threads):
    overlap(lambda: torch_threads(1), lambda: torch_threads(1))
    assert session_count() == two_threads


def test_a_session_that_started_during_a_block_restores_the_process_count(two_threads):
    started, block_over = threading.Event(), threading.Event()

    def late_session():
        torch.get_num_threads()  # its first torch call: OpenMP copies the block's count, 1
        started.set()
        block_over.wait(5)
        with torch_threads(1):
            pass

    session = threading.Thread(target=late_session)
    with torch_threads(1):
        session.start()
        started.wait(5)
    block_over.set()
    session.join(10)
    assert session_count() == two_threads


def test_many_sessions_at_once_restore_the_count(two_threads):
    def session(i):
        for _ in range(20):
            with torch_threads(1 + i % 2):
                assert torch.get_num_threads() == 1 + i % 2

    threads = [threading.Thread(target=session, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert session_count() == two_threads


def test_nested_blocks_and_errors_restore_the_outer_count(two_threads):
    @torch_threads(1)
    def inner():
        return torch.get_num_threads()

    with torch_threads(3):
        assert inner() == 1 and torch.get_num_threads() == 3
    with pytest.raises(RuntimeError), torch_threads(1):
        raise RuntimeError
    assert session_count() == two_threads


def test_request_paths_change_the_count_only_through_the_helper():
    """Only core/threads.py, the training commands and benchmarks call torch.set_num_threads."""
    allowed = {"txviz/core/threads.py"}
    offenders = []
    for path in [*ROOT.glob("txviz/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py"]:
        rel = path.relative_to(ROOT).as_posix()
        if rel in allowed or rel.startswith(("txviz/training/", "txviz/bench/")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "set_num_threads":
                offenders.append(f"{rel}:{node.lineno}")
    assert not offenders, f"use txviz.core.threads.torch_threads instead: {offenders}"
