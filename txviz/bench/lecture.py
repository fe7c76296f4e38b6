"""Lecture: a room of followers on one server, then on two replicas sharing Redis.

Followers are headless clients that speak Streamlit's own protocol over its websocket
(`txviz/app/headless.py`, run as one process by `python -m txviz.app.followers`): each is a real session
of the server, sends the frontend's rerun requests, re-triggers the room bar's `run_every` fragment (the
safety-net poll) on its own timer and receives the fragment reruns the server pushes when the lecturer
moves, so the server does exactly the work 30 browsers would make it do, without 30 Chromiums on the
machine. The lecturer is one headless Chromium page. Measured: the time from the lecturer's "Next step"
until every follower's delta stream carries the new step's label in its room bar, the forward passes the
server ran meanwhile (the room warms the next step ahead, so a step arrived at should cost none), the
server CPU that idle followers cost per second, and the time from "Reveal" to the tally on the
lecturer's screen with every answer in. The baseline, in the same run on a fresh server, is the lecturer
alone: the time from "Next step" until the lecturer's own page has finished.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from txviz.bench._lecture_class import IDLE_S, cpu_seconds, floor, followers_of, forwards, settled, visit
from txviz.bench.load import CHROMIUM, CHROMIUM_FLAGS, IDLE, free_port, launch, server_env, stop_server
from txviz.lecture.files import shipped_lectures

LECTURE = shipped_lectures()["1_attention_and_transformers"]
N = len(LECTURE.steps)
STUDENT_BAR = ".st-key-room_student_bar"
LECTURER_BAR = ".st-key-room_lecturer_bar"
TIMEOUT_MS = 120_000
_SAID: set[str] = set()  # the lecturer browser's error messages already printed


def start_counting_server(port: int, count_file: Path, log_path: Path) -> subprocess.Popen:
    """The app on 127.0.0.1:port with its forward passes counted in count_file."""
    command = [
        sys.executable, "-m", "txviz.bench.lecture_server", str(count_file), "app.py",
        "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    env = server_env()
    env.pop("TXVIZ_REDIS_URL", None)  # one server: rooms in its memory
    return launch(command, port, log_path, env)


async def _new_page(browser, base: str, replica: str | None):
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    if replica:
        await context.add_cookies([{"name": "TXVIZ_REPLICA", "value": replica, "url": base}])
    page = await context.new_page()
    page.on("websocket", _watch_socket)
    page.on("console", _console)
    return page


def _console(message) -> None:
    """The lecturer's frontend failing (a delta it cannot place, a lost connection), once per message."""
    text = message.text
    if message.type == "error" and not text.startswith("Failed to load resource") and text not in _SAID:
        _SAID.add(text)
        phase(f"the lecturer's browser: {text.splitlines()[0]}")


def _watch_socket(socket) -> None:
    """The lecturer's websocket closing mid-run means a frozen screen: say when it happens."""
    socket.on("close", lambda _: phase("the lecturer's websocket closed"))


async def _bar_says(page, bar: str, text: str) -> None:
    try:
        await page.locator(bar).filter(has_text=text).first.wait_for(timeout=TIMEOUT_MS)
    except Exception as error:
        shown = await page.locator(bar).all_inner_texts()
        raise TimeoutError(f"the bar never said {text!r}; it says {shown}") from error


async def room(
    browser, bases: list[str], followers: int, nexts: int, pids: list[int], count_file: Path | None
):
    """One room: the lecturer on bases[0], followers spread over ``bases``; returns the measurements."""
    two = len(bases) > 1
    lecturer = await _new_page(browser, bases[0], "replica1" if two else None)
    await lecturer.goto(f"{bases[0]}/Lecture_Room")
    await lecturer.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
    await lecturer.get_by_role("button", name="Start a room").click()
    await lecturer.wait_for_selector('[data-testid="stImage"]', timeout=TIMEOUT_MS)
    code = parse_qs(urlparse(lecturer.url).query)["room"][0]
    cookies = ["TXVIZ_REPLICA=replica1", "TXVIZ_REPLICA=replica2"] if two else []
    phase(f"room {code} started")
    crowd = await followers_of(bases[0], code, followers, cookies) if followers else None
    phase(f"{followers} followers joined")
    reveal_s = idle_share = None
    if crowd:
        await _bar_says(lecturer, LECTURER_BAR, f"{followers} following")
        phase("the lecturer sees them")
        await crowd.send("answer")
        await crowd.all_answered(followers)
        phase("all answered")
        await _bar_says(lecturer, LECTURER_BAR, f"{followers} answers")
        phase("the tally has them; reveal")
        start = time.monotonic()
        await lecturer.get_by_role("button", name="Reveal").click()
        await lecturer.locator(f'{LECTURER_BAR} [data-testid="stPlotlyChart"]').first.wait_for(
            timeout=TIMEOUT_MS
        )
        reveal_s = time.monotonic() - start
        await asyncio.sleep(3)  # the reveal's last reruns settle
        await settled(count_file)  # and the warm-up started with the room
        before = cpu_seconds(pids)
        await asyncio.sleep(IDLE_S)
        idle_share = (cpu_seconds(pids) - before) / IDLE_S

    results = []
    try:
        for k in range(2, 2 + nexts):
            counted = await settled(count_file)  # the previous step's warm-up of this one is done
            cpu_before = cpu_seconds(pids)
            start = time.monotonic()
            phase(f"next to step {k}")
            await lecturer.get_by_role("button", name="Next step").click()
            lecturer_task = asyncio.ensure_future(_lecturer_done(lecturer, k, start))
            times = await crowd.arrived(followers, f"Step {k} of {N}", start) if crowd else []
            at_arrival = forwards(count_file) - counted
            arrival_cpu = cpu_seconds(pids) - cpu_before  # the followers' page runs, the warm-up ahead
            try:
                lecturer_s = await lecturer_task
            except Exception:
                if count_file is not None:  # only the counting server turns SIGUSR1 into a stack dump
                    dump_stacks(pids)
                raise
            ahead = await settled(count_file) - counted - at_arrival
            results.append((k, LECTURE.steps[k - 1], times, lecturer_s, at_arrival, ahead, arrival_cpu))
        probe = None
        if count_file is not None:  # a late visitor of the step warmed ahead (the next one), nobody there yet
            counted = await settled(count_file)
            step = LECTURE.steps[1 + nexts]
            await visit(bases[0], {"page": f"pages/{step.page}.py", "settings": step.values()})
            probe = (2 + nexts, forwards(count_file) - counted)
    finally:
        if crowd:
            await crowd.stop()
    await lecturer.context.close()
    return reveal_s, idle_share, results, probe


def phase(what: str) -> None:
    """Progress, on stderr: where a long run is."""
    print(f"[{time.monotonic():.1f}] {what}", file=sys.stderr, flush=True)


def dump_stacks(pids: list[int]) -> None:
    """A stalled run: each counting server writes every thread's stack to its log (SIGUSR1)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGUSR1)
    print("the lecturer's page stalled; every server thread's stack is in the server logs", file=sys.stderr)


async def _lecturer_done(page, step: int, start: float) -> float:
    await _bar_says(page, LECTURER_BAR, f"Step {step} of {N}")
    await page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
    return time.monotonic() - start


def report(name: str, followers: int, measured, counted: bool, alone: dict[int, float]) -> list[float]:
    reveal_s, idle_share, results, probe = measured
    print(f"\n## {name}: {followers} followers (headless protocol clients), the lecturer in Chromium")
    print(f"reveal to tally with {followers} answers = {reveal_s:.2f} s")
    print(
        f"server CPU of {followers} idle followers (and the lecturer's page) = {100 * idle_share:.1f}% of one core"
    )
    slowest = []
    for k, step, times, lecturer_s, at_arrival, ahead, arrival_cpu in results:
        ran = f"{at_arrival} forwards until all arrived, {ahead} more after (step {k + 1} warmed ahead)"
        base = alone.get(k)
        ratio = f", slowest/lecturer alone {max(times) / base:.2f}x" if base else ""
        print(
            f"next to step {k} ({step.page}, {step.title}): median {statistics.median(times):.2f} s, "
            f"slowest {max(times):.2f} s, lecturer's own page {lecturer_s:.2f} s{ratio}, "
            + (ran if counted else "forwards not counted (replicas)")
            + f"; server CPU until all arrived {arrival_cpu:.2f} s ({1000 * arrival_cpu / followers:.0f} ms a follower)"
        )
        slowest.append(max(times))
    if probe:
        print(f"a fresh visitor of step {probe[0]}, warmed ahead: {probe[1]} forwards")
    return slowest


async def main_async(args) -> int:
    from playwright.async_api import async_playwright

    from txviz.rooms.redis_server import installed, redis_server
    from txviz.serving.replicas import cluster

    folder = Path(tempfile.mkdtemp(prefix="txviz-lecture-bench-"))
    print(
        f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min), {os.cpu_count()} CPUs"
    )
    if args.floor:
        print(f"\n## the floor: {args.followers} sessions on a bare page, one fragment rerun every 2 s each")
        for gc_after_run in (True, False):
            share = await floor(folder, args.followers, gc_after_run)
            print(f"runner.postScriptGC {str(gc_after_run).lower()}: {100 * share:.1f}% of one core, "
                  f"{1000 * share / (args.followers / 2.0):.1f} ms a fragment rerun")  # fmt: skip
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        measured = {}
        for followers in (0, args.followers):  # the baseline first: the lecturer alone, a fresh server
            count_file = folder / f"forwards-{followers}.txt"
            port = free_port()
            server = start_counting_server(port, count_file, folder / f"server-{followers}.log")
            try:
                measured[followers] = await room(
                    browser, [f"http://127.0.0.1:{port}"], followers, args.nexts, [server.pid], count_file
                )
            finally:
                stop_server(server)
        alone = {k: lecturer_s for k, _, _, lecturer_s, *_ in measured[0][2]}
        print("\n## baseline: the lecturer alone (0 followers, a fresh server)")
        for k, step, _, lecturer_s, at_arrival, ahead, _ in measured[0][2]:
            print(f"next to step {k} ({step.page}): lecturer's own page {lecturer_s:.2f} s, "
                  f"{at_arrival} forwards until done, {ahead} more after")  # fmt: skip
        one = report("one server (rooms in memory)", args.followers, measured[args.followers], True, alone)
        if args.replicas and installed():
            with (
                redis_server() as redis,
                cluster(2, log_folder=folder / "replicas", redis_url=redis.url) as running,
            ):
                pids = [p.pid for p in running.replicas.values()]
                two = await room(browser, [running.url], args.followers, args.nexts, pids, None)
            report("two replicas with Redis", args.followers, two, False, alone)
        elif args.replicas:
            print("\nreplicas skipped: redis-server is missing")
        await browser.close()
    print(f"\nload after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min); logs in {folder}")
    print(f"slowest of {args.followers} followers after next = {statistics.median(one):.2f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench lecture", description=__doc__)
    parser.add_argument("--followers", type=int, default=30)
    parser.add_argument("--nexts", type=int, default=3, help="lecturer's nexts timed (>= 3 for a median)")
    parser.add_argument("--no-replicas", dest="replicas", action="store_false")
    parser.add_argument("--no-floor", dest="floor", action="store_false", help="skip the bare page's floor")
    parser.add_argument(
        "--poll", type=float, default=None, help="the followers' poll in s (TXVIZ_ROOM_POLL_S)"
    )
    args = parser.parse_args(argv)
    if args.poll:
        os.environ["TXVIZ_ROOM_POLL_S"] = str(args.poll)  # every server this run starts inherits it
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("error: the lecture benchmark needs playwright (requirements-dev.txt)", file=sys.stderr)
        return 1
    return asyncio.run(main_async(args))
