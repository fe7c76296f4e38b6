"""The lecture benchmark's class: the followers' process and what it saw, the server's forward passes and
CPU, and the floor (a bare page's fragment reruns)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from txviz.bench.load import ROOT, free_port, launch, server_env, stop_server
from txviz.lecture.steps import Step

TIMEOUT_S = 300.0
IDLE_S = 20.0  # two of a follower's 10 s polls


def forwards(count_file: Path | None) -> int:
    if count_file is None or not count_file.exists():
        return 0
    return len(count_file.read_text().splitlines())


def cpu_seconds(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        process = psutil.Process(pid)
        for p in [process, *process.children(recursive=True)]:
            times = p.cpu_times()
            total += times.user + times.system
    return total


class Class:
    """The followers' process: what each follower's bar said and when, and the answers sent."""

    def __init__(self, process):
        self.process, self.bars, self.answered, self.joined = process, {}, 0, asyncio.Event()
        self.unconfirmed: list[int] = []  # followers whose screen never said the room had their answer
        self.clicked_again: list[int] = []  # followers who locked in again: the first click was not counted
        self.stopped: dict[int, str] = {}  # followers a browser would have stopped on: why
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for line in self.process.stdout:
            event = json.loads(line)
            if "bar" in event:
                self.bars.setdefault(event["i"], []).append((event["bar"], event["t"]))
            elif "answered" in event:
                self.answered += 1
                if not event.get("counted", True):
                    self.unconfirmed.append(event["i"])
                elif event.get("tries", 1) > 1:
                    self.clicked_again.append(event["i"])
            elif "stopped" in event:
                self.stopped[event["i"]] = event["stopped"]
            elif "joined" in event:
                self.joined.set()

    async def send(self, line: str) -> None:
        self.process.stdin.write(f"{line}\n".encode())
        await self.process.stdin.drain()

    async def arrived(self, n: int, text: str, since: float) -> list[float]:
        """Each follower's time from ``since`` until its bar said ``text``."""
        while True:
            times = [next((t - since for bar, t in self.bars.get(i, []) if text in bar and t >= since), None)
                     for i in range(n)]  # fmt: skip
            if None not in times:
                return times
            if self.process.returncode is not None:
                raise RuntimeError("the followers' process ended")
            if time.monotonic() - since > TIMEOUT_S:
                raise TimeoutError(
                    f"{n - times.count(None)} of {n} followers showed {text!r} in {TIMEOUT_S:.0f} s"
                )
            await asyncio.sleep(0.05)

    async def all_answered(self, n: int) -> None:
        """Until every follower has sent its answer."""
        end = time.monotonic() + TIMEOUT_S
        while self.answered < n:
            if self.process.returncode is not None:
                raise RuntimeError("the followers' process ended before all answered")
            if time.monotonic() > end:
                raise TimeoutError(f"{self.answered} of {n} followers answered in {TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.1)

    async def stop(self) -> None:
        with contextlib.suppress(OSError):  # the followers' process may have ended: its pipe is closed
            await self.send("quit")
        try:
            await asyncio.wait_for(self.process.wait(), 20)
        except TimeoutError:
            self.process.kill()


async def followers_of(base: str, code: str, n: int, cookies: list[str]) -> Class:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "txviz.app.testing.followers", base, code, str(n), *cookies,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=ROOT, env=server_env(),
    )  # fmt: skip
    followers = Class(process)
    await asyncio.wait_for(followers.joined.wait(), TIMEOUT_S)
    return followers


async def settled(count_file: Path | None, quiet_s: float = 3.0, limit_s: float = 300.0) -> int:
    """The forward count once it stopped growing for ``quiet_s`` (the background warm-up done)."""
    end, last, since = time.monotonic() + limit_s, forwards(count_file), time.monotonic()
    while time.monotonic() < end and time.monotonic() - since < quiet_s:
        await asyncio.sleep(0.25)
        now = forwards(count_file)
        if now != last:
            last, since = now, time.monotonic()
    return last


async def visit(base: str, step: Step, cookie: str = "") -> None:
    """A fresh session opens a step's page with its settings (as a late student would), one full run."""
    query = urlencode(step.query_params())
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "txviz.app.testing.followers",
        "visit",
        base,
        step.page,
        query,
        cwd=ROOT,
        env=server_env(),
    )
    await process.wait()


TINY = """import streamlit as st

st.markdown("a bare page")


@st.fragment(run_every=2.0)
def bar():
    st.markdown("Step 1")


bar()
"""


async def floor(folder: Path, followers: int, gc_after_run: bool) -> float:
    """Server CPU (share of one core) of ``followers`` sessions on a bare page whose one fragment reruns
    every 2 s: what Streamlit itself costs per poll, the floor under the room bar's cost."""
    (folder / "bare.py").write_text(TINY)
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(folder / "bare.py"), "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats",
               "false", "--runner.postScriptGC", str(gc_after_run).lower()]  # fmt: skip
    server = launch(command, port, folder / "bare.log", server_env())
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "txviz.app.testing.followers", "idle", f"http://127.0.0.1:{port}", "bare",
            str(followers), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=ROOT,
            env=server_env(),
        )  # fmt: skip
        await process.stdout.readline()  # joined
        await asyncio.sleep(3)
        before = cpu_seconds([server.pid])
        await asyncio.sleep(IDLE_S)
        share = (cpu_seconds([server.pid]) - before) / IDLE_S
        process.stdin.write(b"quit\n")
        await process.stdin.drain()
        await process.wait()
    finally:
        stop_server(server)
    return share
