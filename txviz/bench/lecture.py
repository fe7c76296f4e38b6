"""Lecture: a room of followers on one server, then on two replicas sharing Redis.

Followers are headless Chromium contexts of one browser (real sessions: each runs the app's room bar
fragment), and one more context is the lecturer. Measured: the time from the lecturer's "Next step" until
every follower's bar shows the new step (each follower's time; steps whose model work is not yet cached
included, and how many forward passes the server ran for the step), the server CPU that idle followers
cost per second, and the time from "Reveal" to the tally on the lecturer's screen with every answer in.
The baseline, measured in the same run, is the lecturer's own page: the time from "Next step" until the
lecturer's page has finished, which includes the step's model work once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from txviz.bench.load import CHROMIUM, CHROMIUM_FLAGS, IDLE, free_port, launch, server_env, stop_server
from txviz.lecture.files import shipped_lectures

LECTURE = shipped_lectures()["1_attention_and_transformers"]
N = len(LECTURE.steps)
STUDENT_BAR = ".st-key-room_student_bar"
LECTURER_BAR = ".st-key-room_lecturer_bar"
TIMEOUT_MS = 300_000
IDLE_S = 10.0


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


async def _new_page(browser, base: str, replica: str | None):
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    if replica:
        await context.add_cookies([{"name": "TXVIZ_REPLICA", "value": replica, "url": base}])
    return await context.new_page()


async def _bar_says(page, bar: str, text: str) -> None:
    await page.locator(bar).filter(has_text=text).first.wait_for(timeout=TIMEOUT_MS)


async def room(
    browser, bases: list[str], followers: int, nexts: int, pids: list[int], count_file: Path | None
):
    """One room: the lecturer on bases[0], followers spread over ``bases``; returns the measurements."""
    lecturer = await _new_page(browser, bases[0], "replica1" if len(bases) > 1 else None)
    await lecturer.goto(f"{bases[0]}/Lecture_Room")
    await lecturer.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
    await lecturer.get_by_role("button", name="Start a room").click()
    await lecturer.wait_for_selector('[data-testid="stImage"]', timeout=TIMEOUT_MS)
    code = parse_qs(urlparse(lecturer.url).query)["room"][0]

    gate = asyncio.Semaphore(6)  # join a few at a time, as a class walks in

    async def join(i: int):
        base = bases[i % len(bases)]
        async with gate:
            page = await _new_page(browser, base, f"replica{i % len(bases) + 1}" if len(bases) > 1 else None)
            await page.goto(
                f"{base}/Lecture_Room?room={code}", wait_until="commit"
            )  # the app switches page at once
            await _bar_says(page, STUDENT_BAR, f"Step 1 of {N}")
            return page

    pages = await asyncio.gather(*(join(i) for i in range(followers)))
    await _bar_says(lecturer, LECTURER_BAR, f"{followers} following")

    question = LECTURE.steps[0].question

    async def answer(i: int, page) -> None:
        async with gate:
            bar = page.locator(STUDENT_BAR)
            await bar.get_by_text(question.options[i % len(question.options)], exact=True).click()
            await bar.get_by_role("button", name="Lock in my answer").click()
            await bar.get_by_text("Lock in my answer").wait_for(state="detached", timeout=TIMEOUT_MS)

    await asyncio.gather(*(answer(i, p) for i, p in enumerate(pages)))
    await _bar_says(lecturer, LECTURER_BAR, f"{followers} answers")
    start = time.monotonic()
    await lecturer.get_by_role("button", name="Reveal").click()
    await lecturer.locator(f'{LECTURER_BAR} [data-testid="stPlotlyChart"]').first.wait_for(timeout=TIMEOUT_MS)
    reveal_s = time.monotonic() - start

    await asyncio.sleep(3)  # the reveal's last reruns settle
    before = cpu_seconds(pids)
    await asyncio.sleep(IDLE_S)
    idle_share = (cpu_seconds(pids) - before) / IDLE_S

    results = []
    for k in range(2, 2 + nexts):
        counted = forwards(count_file)
        start = time.monotonic()

        async def arrive(page, step: int = k, since: float = start) -> float:
            await _bar_says(page, STUDENT_BAR, f"Step {step} of {N}")
            return time.monotonic() - since

        await lecturer.get_by_role("button", name="Next step").click()
        lecturer_task = asyncio.ensure_future(_lecturer_done(lecturer, k, start))
        times = await asyncio.gather(*(arrive(p) for p in pages))
        lecturer_s = await lecturer_task
        await asyncio.sleep(2)
        results.append((k, LECTURE.steps[k - 1], times, lecturer_s, forwards(count_file) - counted))
    return reveal_s, idle_share, results


async def _lecturer_done(page, step: int, start: float) -> float:
    await _bar_says(page, LECTURER_BAR, f"Step {step} of {N}")
    await page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
    return time.monotonic() - start


def report(
    name: str, followers: int, reveal_s: float, idle_share: float, results, counted: bool
) -> list[float]:
    print(f"\n## {name}: {followers} followers")
    print(f"reveal to tally with {followers} answers = {reveal_s:.2f} s")
    print(f"server CPU of {followers} idle followers = {100 * idle_share:.1f}% of one core")
    slowest = []
    for k, step, times, lecturer_s, ran in results:
        ran_text = f"{ran} forwards" if counted else "forwards not counted"
        print(
            f"next to step {k} ({step.page}, {step.title}): median {statistics.median(times):.2f} s, "
            f"slowest {max(times):.2f} s, lecturer's own page {lecturer_s:.2f} s, "
            f"ratio slowest/lecturer {max(times) / max(lecturer_s, 1e-9):.2f}x, {ran_text}"
        )
        slowest.append(max(times))
    return slowest


async def main_async(args) -> int:
    from playwright.async_api import async_playwright

    from txviz.rooms.redis_server import installed, redis_server
    from txviz.serving.replicas import cluster

    folder = Path(tempfile.mkdtemp(prefix="txviz-lecture-bench-"))
    count_file = folder / "forwards.txt"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        port = free_port()
        server = start_counting_server(port, count_file, folder / "server.log")
        try:
            reveal_s, idle, results = await room(
                browser, [f"http://127.0.0.1:{port}"], args.followers, args.nexts, [server.pid], count_file
            )
        finally:
            stop_server(server)
        one = report("one server (rooms in memory)", args.followers, reveal_s, idle, results, True)
        if args.replicas and installed():
            with (
                redis_server() as redis,
                cluster(2, log_folder=folder / "replicas", redis_url=redis.url) as running,
            ):
                pids = [p.pid for p in running.replicas.values()]
                reveal_s, idle, results = await room(
                    browser, [running.url], args.followers, args.nexts, pids, None
                )
            report("two replicas with Redis", args.followers, reveal_s, idle, results, False)
        elif args.replicas:
            print("\nreplicas skipped: redis-server is missing")
        await browser.close()
    print(f"\nload average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs; logs in {folder}")
    print(f"slowest of {args.followers} followers after next = {statistics.median(one):.2f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench lecture", description=__doc__)
    parser.add_argument("--followers", type=int, default=30)
    parser.add_argument("--nexts", type=int, default=3, help="lecturer's nexts timed (>= 3 for a median)")
    parser.add_argument("--no-replicas", dest="replicas", action="store_false")
    args = parser.parse_args(argv)
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("error: the lecture benchmark needs playwright (requirements-dev.txt)", file=sys.stderr)
        return 1
    return asyncio.run(main_async(args))
