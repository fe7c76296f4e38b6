"""The heavy-pass queue: at most max_jobs at once, first come first served, cancellation frees a place."""

from __future__ import annotations

import threading
import time

import pytest

from txviz.serving.jobs import JobCancelled, JobQueue, waiting_message

TIMEOUT_S = 10


def wait_until(condition, timeout=TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


class Jobs:
    """Threads that each take a turn in the queue and hold it until released."""

    def __init__(self, queue: JobQueue):
        self.queue, self.started, self.errors = queue, [], []
        self.running = 0
        self.most_at_once = 0
        self.lock = threading.Lock()
        self.release = {}
        self.threads = []

    def start(self, name: str, owner: str | None = None, on_wait=None) -> None:
        self.release[name] = threading.Event()

        def job():
            with self.lock:
                self.started.append(name)
                self.running += 1
                self.most_at_once = max(self.most_at_once, self.running)
            assert self.release[name].wait(TIMEOUT_S)
            with self.lock:
                self.running -= 1

        def body():
            try:
                self.queue.run(job, owner=owner or name, on_wait=on_wait, poll_s=0.01)
            except JobCancelled as error:
                self.errors.append((name, error))

        thread = threading.Thread(target=body, daemon=True)
        self.threads.append(thread)
        thread.start()
        wait_until(lambda: name in self.started or self.queue.ahead(owner or name) is not None)

    def finish(self, name: str) -> None:
        self.release[name].set()

    def join(self) -> None:
        for event in self.release.values():
            event.set()
        for thread in self.threads:
            thread.join(TIMEOUT_S)
            assert not thread.is_alive()


def test_at_most_max_jobs_run_and_the_rest_start_in_arrival_order():
    jobs = Jobs(JobQueue(max_jobs=2))
    for name in "abcdef":
        jobs.start(name)
    assert jobs.started == ["a", "b"]
    assert [jobs.queue.ahead(n) for n in "cdef"] == [0, 1, 2, 3]
    assert jobs.queue.load() == (2, 4)
    for finished, expect in zip(
        "badcef", (["a", "b", "c"], ["a", "b", "c", "d"], list("abcde")), strict=False
    ):
        jobs.finish(finished)
        wait_until(lambda expect=expect: jobs.started == expect)
    jobs.join()
    assert jobs.started == list("abcdef") and jobs.most_at_once == 2 and not jobs.errors
    assert jobs.queue.load() == (0, 0)


def test_a_waiting_caller_hears_its_place_as_it_moves_up():
    jobs, heard = Jobs(JobQueue(max_jobs=1)), []
    jobs.start("a")
    jobs.start("b")
    jobs.start("c", on_wait=heard.append)
    wait_until(lambda: heard and heard[-1] == 1)
    jobs.finish("a")
    wait_until(lambda: heard[-1] == 0)
    jobs.finish("b")
    wait_until(lambda: jobs.started == ["a", "b", "c"])
    jobs.join()
    assert sorted(set(heard), reverse=True) == [1, 0]
    assert (
        waiting_message(2) == "2 requests ahead of you." and waiting_message(1) == "1 request ahead of you."
    )


def test_cancelling_a_waiting_request_frees_its_place_and_the_job_never_runs():
    jobs = Jobs(JobQueue(max_jobs=1))
    jobs.start("a")
    jobs.start("b")
    jobs.start("c")
    jobs.queue.cancel("b")
    wait_until(lambda: jobs.queue.ahead("c") == 0)
    jobs.finish("a")
    jobs.join()
    assert jobs.started == ["a", "c"]
    assert [name for name, _ in jobs.errors] == ["b"]


def test_a_new_request_of_the_same_session_replaces_its_waiting_one():
    jobs = Jobs(JobQueue(max_jobs=1))
    jobs.start("a")
    jobs.start("old", owner="session")
    jobs.start("other")
    jobs.start("new", owner="session")
    wait_until(lambda: [n for n, _ in jobs.errors] == ["old"])
    assert jobs.queue.ahead("other") == 0 and jobs.queue.ahead("session") == 1
    jobs.join()
    assert jobs.started == ["a", "other", "new"]


def test_a_caller_stopped_while_waiting_leaves_the_queue():
    """Streamlit stops a script whose session left by raising inside it: here, inside on_wait."""
    queue, gate = JobQueue(max_jobs=1), threading.Event()

    class Left(Exception):
        pass

    def leave(ahead):
        raise Left

    with queue.turn("a"):
        with pytest.raises(Left):
            queue.run(lambda: gate.set(), owner="b", on_wait=leave, poll_s=0.01)
        assert queue.load() == (1, 0)
    assert not gate.is_set() and queue.load() == (0, 0)
    assert queue.run(lambda: 42, owner="b") == 42


def test_a_failing_job_hands_its_slot_on():
    queue = JobQueue(max_jobs=1)
    with pytest.raises(ZeroDivisionError):
        queue.run(lambda: 1 / 0)
    assert queue.load() == (0, 0) and queue.run(lambda: "next") == "next"
