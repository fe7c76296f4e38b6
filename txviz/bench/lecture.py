"""Lecture: a room of followers on one server, then on replicas sharing Redis (2 by default).

Followers are headless clients that speak Streamlit's own protocol over its websocket
(`txviz/app/lecture/headless.py`, run as one process by `python -m txviz.app.testing.followers`): each is a real session
of the server, sends the frontend's rerun requests, re-triggers the room bar's `run_every` fragment (the
safety-net poll) on its own timer and receives the fragment reruns the server pushes when the lecturer
moves, so the server does exactly the work 30 browsers would make it do, without 30 Chromiums on the
machine. The lecturer is one headless Chromium page that stays on the presenter's console (the Lecture
Room page, `.st-key-room_presenter`), and a second page of the same browser is the projector window,
opened from the console's link: a follower without the key that shows each step and the tally at reveal.
Measured, for each "Next step" on the console: the time until the console shows "Now (k of N)" and has
finished its run; until the projector window's bar says "Step k of N" (and its page has finished); until
every follower's delta stream carries the new step's label in its room bar; the forward passes the server
ran meanwhile (the room warms the next step ahead, so a step arrived at should cost none); the server CPU
that idle followers cost per second; and the time from "Reveal" to the tally on the console (and on the
projector) with every answer in. The baseline, in the same run on a fresh server, is the lecturer alone
(the console and the projector window, no followers), timed the same way.

With ``--replicas N`` (2 by default, ``--no-replicas`` for none) the room runs again on N replicas
behind HAProxy sharing Redis: the lecturer's browser is pinned to the first replica, follower i to
replica i mod N + 1 (the balancer's sticky cookie).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from txviz.bench import ws_trace
from txviz.bench._lecture_class import IDLE_S, cpu_seconds, floor, followers_of, forwards, settled, visit
from txviz.bench.load import CHROMIUM, CHROMIUM_FLAGS, IDLE, free_port, launch, server_env, stop_server
from txviz.lecture.files import shipped_lectures

LECTURE = shipped_lectures()["1_attention_and_transformers"]
N = len(LECTURE.steps)
STUDENT_BAR = ".st-key-room_student_bar"
PRESENTER = ".st-key-room_presenter"  # the console: Now/Next, the step buttons, followers, answers, tally
PROJECTOR_BAR = ".st-key-room_projector_bar"
CHART = '[data-testid="stPlotlyChart"]'
TIMEOUT_MS = 120_000
ANSWERS_MS = 60_000  # every follower has answered: the tally shows them all by then, or never
_TRACES: dict = {}  # a window's page -> the last messages of its websocket
_SAID: set[str] = set()  # the lecturer's browser's error messages already printed
_LOST: dict = {}  # a window's page -> an Event set when its websocket closed (its screen is frozen)
_LAST_ERROR: dict = {}  # a window's page -> the last error its frontend printed


class Frozen(RuntimeError):
    """A window's websocket closed: its frontend failed (e.g. a delta it could not place) and stays put."""


@dataclass
class Step:
    """One "Next step": each window's time from the click (s), and what the server ran meanwhile."""

    k: int  # the step moved to (1-based)
    step: object  # the lecture's step
    times: list[float]  # each follower's, until its room bar said "Step k of N"
    console_s: float  # until the console said "Now (k of N)" and finished its run
    projector_s: float | None  # until the projector window's bar said "Step k of N" (None: it froze)
    projector_done_s: float | None  # until the projector window's page finished its run
    at_arrival: int  # forward passes until every follower (or the projector, alone) arrived
    ahead: int  # forward passes after: the next step's warm-up
    arrival_cpu: float  # server CPU seconds until then


@dataclass
class Room:
    """One room's measurements (the reveal and idle ones only with followers)."""

    reveal_s: float = 0.0  # "Reveal" to the tally on the console
    projector_reveal_s: float = 0.0  # ... and on the projector window
    idle_share: float = 0.0  # server CPU of the idle room, share of one core
    answers: int | None = None  # the tally's count when it never showed every follower's answer
    unconfirmed: int = 0  # followers whose own screen never said the room had their answer
    clicked_again: int = 0  # followers whose first "Lock in my answer" was not counted (they clicked again)
    steps: list[Step] = field(default_factory=list)
    probe: tuple[int, int] | None = None  # (step, forwards) of a fresh visitor of the step warmed ahead
    frozen: list[str] = field(default_factory=list)  # the projector window's freezes (then reloaded)
    stopped: dict[int, str] = field(default_factory=dict)  # followers a browser would have stopped on


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
    return await _watched(await context.new_page(), "the lecturer's console")


async def _watched(page, who: str):
    """A page whose frontend failures and lost websocket are said on stderr, as ``who``."""
    lost = _LOST[page] = asyncio.Event()
    trace = _TRACES[page] = ws_trace.Trace(who)

    def closed(_) -> None:
        phase(f"{who}: websocket closed")
        lost.set()

    def opened(socket) -> None:
        socket.on("close", closed)
        trace.attach(socket)

    page.on("websocket", opened)
    page.on("console", lambda message: _console(page, who, message))
    return page


def _console(page, who: str, message) -> None:
    """A window's frontend failing (a delta it cannot place, a lost connection), once per message."""
    text = message.text
    if message.type == "error" and not text.startswith("Failed to load resource"):
        _LAST_ERROR.setdefault(page, text.splitlines()[0])
        if text not in _SAID:
            _SAID.add(text)
            phase(f"{who}: {text.splitlines()[0]}")
            if page in _TRACES:
                print(_TRACES[page].text(), file=sys.stderr, flush=True)


async def _unless_frozen(page, waiting):
    """``waiting``'s result, or Frozen as soon as the page's websocket closes."""
    task, lost = asyncio.ensure_future(waiting), asyncio.ensure_future(_LOST[page].wait())
    done, _ = await asyncio.wait([task, lost], return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        lost.cancel()
        return task.result()
    task.cancel()
    print(_TRACES[page].text(), file=sys.stderr, flush=True)  # what the frontend was told before it failed
    raise Frozen(_LAST_ERROR.get(page) or "its websocket closed")


async def _bar_says(page, bar: str, text: str, timeout_ms: float = TIMEOUT_MS) -> None:
    try:
        await page.locator(bar).filter(has_text=text).first.wait_for(timeout=timeout_ms)
    except Exception as error:
        shown = await page.locator(bar).all_inner_texts()
        raise TimeoutError(f"the bar never said {text!r}; it says {shown}") from error


def replica_cookies(replicas: int) -> list[str]:
    """The balancer's sticky cookie of each replica: follower i goes to replica i mod N + 1."""
    return [f"TXVIZ_REPLICA=replica{i}" for i in range(1, replicas + 1)] if replicas > 1 else []


async def room(
    browser,
    base: str,
    followers: int,
    nexts: int,
    pids: list[int],
    count_file: Path | None,
    replicas: int = 0,
) -> Room:
    """One room at ``base``: the lecturer's console and the projector window (pinned to the first replica
    when ``replicas`` > 1), followers spread over the replicas; returns the measurements."""
    lecturer = await _new_page(browser, base, "replica1" if replicas > 1 else None)
    await lecturer.goto(f"{base}/Lecture_Room")
    await lecturer.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
    await lecturer.get_by_role("button", name="Start a room").click()
    await lecturer.wait_for_selector('[data-testid="stImage"]', timeout=TIMEOUT_MS)
    await _bar_says(lecturer, PRESENTER, f"Now (1 of {N})")
    code = parse_qs(urlparse(lecturer.url).query)["room"][0]
    phase(f"room {code} started")
    href = await lecturer.get_by_role("link", name="Open the projector window").get_attribute("href")
    projector = await _watched(await lecturer.context.new_page(), "the projector window")
    await projector.goto(href)  # a second window of the lecturer's browser, as the projector shows it
    await _bar_says(projector, PROJECTOR_BAR, f"Step 1 of {N}")
    phase("the projector window follows")
    crowd = await followers_of(base, code, followers, replica_cookies(replicas)) if followers else None
    phase(f"{followers} followers joined")
    measured = Room()
    if crowd:
        await _bar_says(lecturer, PRESENTER, f"{followers} following")
        phase("the console sees them")
        await crowd.send("answer")
        await crowd.all_answered(followers)
        measured.clicked_again, measured.unconfirmed = len(crowd.clicked_again), len(crowd.unconfirmed)
        phase(
            f"all answered ({measured.clicked_again} clicked again, {measured.unconfirmed} never confirmed)"
        )
        try:
            await _bar_says(lecturer, PRESENTER, f"{followers} answers", ANSWERS_MS)
            phase("the tally has them; reveal")
        except TimeoutError:  # answers the followers sent that the room never counted: say so, reveal
            shown = " ".join(await lecturer.locator(PRESENTER).all_inner_texts())
            counted = re.search(r"(\d+) answers", shown)
            measured.answers = int(counted.group(1)) if counted else 0
            phase(
                f"the tally has {measured.answers} of {followers} answers after {ANSWERS_MS / 1000:.0f} s; reveal"
            )
        start = time.monotonic()
        await lecturer.locator(PRESENTER).get_by_role("button", name="Reveal").click()
        on_projector = asyncio.ensure_future(_shows(projector, f"{PROJECTOR_BAR} {CHART}", start))
        measured.reveal_s = await _shows(lecturer, f"{PRESENTER} {CHART}", start)
        measured.projector_reveal_s = await on_projector
        await asyncio.sleep(3)  # the reveal's last reruns settle
        await settled(count_file)  # and the warm-up started with the room
        before = cpu_seconds(pids)
        await asyncio.sleep(IDLE_S)
        measured.idle_share = (cpu_seconds(pids) - before) / IDLE_S

    try:
        for k in range(2, 2 + nexts):
            counted = await settled(count_file)  # the previous step's warm-up of this one is done
            cpu_before = cpu_seconds(pids)
            start = time.monotonic()
            phase(f"next to step {k}")
            await lecturer.locator(PRESENTER).get_by_role("button", name="Next step").click()
            console = asyncio.ensure_future(_unless_frozen(lecturer, _console_done(lecturer, k, start)))
            shown = asyncio.ensure_future(_unless_frozen(projector, _projector_arrived(projector, k, start)))
            if crowd:
                times = await crowd.arrived(followers, f"Step {k} of {N}", start)
            else:  # alone: until the projector window, the one follower, arrived
                times = []
                await asyncio.wait([shown])
            at_arrival = forwards(count_file) - counted
            arrival_cpu = cpu_seconds(pids) - cpu_before  # the followers' page runs, the warm-up ahead
            try:
                console_s = await console
                try:
                    projector_s, projector_done_s = await shown
                except Frozen as error:  # a lecturer would reload it: so does the benchmark, and says so
                    projector_s = projector_done_s = None
                    measured.frozen.append(f"step {k}: {error}")
                    phase(f"the projector window froze at step {k}: {error}; reloading it")
                    await projector.goto(href)
                    _LOST[projector].clear()
                    _LAST_ERROR.pop(projector, None)
                    await _bar_says(projector, PROJECTOR_BAR, f"Step {k} of {N}")
            except Frozen:
                raise
            except Exception:
                if count_file is not None:  # only the counting server turns SIGUSR1 into a stack dump
                    dump_stacks(pids)
                raise
            ahead = await settled(count_file) - counted - at_arrival
            measured.steps.append(
                Step(k, LECTURE.steps[k - 1], times, console_s, projector_s, projector_done_s, at_arrival,
                     ahead, arrival_cpu)
            )  # fmt: skip
        if count_file is not None:  # a late visitor of the step warmed ahead (the next one), nobody there yet
            counted = await settled(count_file)
            step = LECTURE.steps[1 + nexts]
            await visit(base, step)
            measured.probe = (2 + nexts, forwards(count_file) - counted)
    finally:
        if crowd:
            measured.stopped = dict(crowd.stopped)
            await crowd.stop()
    await lecturer.context.close()
    return measured


async def _shows(page, selector: str, start: float) -> float:
    await page.locator(selector).first.wait_for(timeout=TIMEOUT_MS)
    return time.monotonic() - start


async def _console_done(page, step: int, start: float) -> float:
    """The console after its Next: it says "Now (step of N)" and its run has finished."""
    await _bar_says(page, PRESENTER, f"Now ({step} of {N})")
    await page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
    return time.monotonic() - start


async def _projector_arrived(page, step: int, start: float) -> tuple[float, float]:
    """The projector window after a Next: when its bar says "Step step of N", and when its page finished."""
    await _bar_says(page, PROJECTOR_BAR, f"Step {step} of {N}")
    arrived = time.monotonic() - start
    await page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)
    return arrived, time.monotonic() - start


def phase(what: str) -> None:
    """Progress, on stderr: where a long run is."""
    print(f"[{time.monotonic():.1f}] {what}", file=sys.stderr, flush=True)


def dump_stacks(pids: list[int]) -> None:
    """A stalled run: each counting server writes every thread's stack to its log (SIGUSR1)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGUSR1)
    print("a window stalled; every server thread's stack is in the server logs", file=sys.stderr)


def _projector(step: Step) -> str:
    if step.projector_s is None:
        return "projector FROZE (reloaded)"
    return f"projector {step.projector_s:.2f} s (page done {step.projector_done_s:.2f} s)"


def report(name: str, followers: int, measured: Room, counted: bool, alone: Room) -> list[float]:
    """The room's lines; the slowest follower of each step."""
    print(f"\n## {name}: {followers} followers (headless protocol clients), the lecturer's console and the "
          "projector window in Chromium")  # fmt: skip
    print(f"reveal to tally with {followers} answers = {measured.reveal_s:.2f} s on the console, "
          f"{measured.projector_reveal_s:.2f} s on the projector")  # fmt: skip
    if measured.clicked_again or measured.unconfirmed:
        print(f"answers: {measured.clicked_again} of {followers} followers' first lock-in was not counted "
              f"(their screen never said so: they clicked again), {measured.unconfirmed} never confirmed")  # fmt: skip
    if measured.answers is not None:
        print(
            f"the tally never showed {followers} answers: {measured.answers} after every follower had answered "
            f"({measured.unconfirmed} never saw 'The room has your answer' on their own screen)"
        )
    print(f"server CPU of {followers} idle followers (and the console and projector) = "
          f"{100 * measured.idle_share:.1f}% of one core")  # fmt: skip
    slowest = []
    base = {step.k: step for step in alone.steps}
    for step in measured.steps:
        ran = f"{step.at_arrival} forwards until all arrived, {step.ahead} more after (step {step.k + 1} warmed ahead)"
        lone = base.get(step.k)
        ratio = (
            f", slowest/projector alone {max(step.times) / lone.projector_s:.2f}x"
            if lone and lone.projector_s
            else ""
        )
        print(
            f"next to step {step.k} ({step.step.page}, {step.step.title}): presenter {step.console_s:.2f} s"
            + (f" (alone {lone.console_s:.2f} s)" if lone else "")
            + f", {_projector(step)}, followers "
            f"median {statistics.median(step.times):.2f} s, slowest {max(step.times):.2f} s{ratio}, "
            + (ran if counted else "forwards not counted (replicas)")
            + f"; server CPU until all arrived {step.arrival_cpu:.2f} s "
            f"({1000 * step.arrival_cpu / followers:.0f} ms a follower)"
        )
        slowest.append(max(step.times))
    for frozen in measured.frozen:
        print(f"the projector window froze at {frozen} (reloaded)")
    print(f"followers whose browser would have stopped = {len(measured.stopped)} of {followers}"
          + (f" (first: {next(iter(measured.stopped.values()))})" if measured.stopped else ""))  # fmt: skip
    if measured.probe:
        print(f"a fresh visitor of step {measured.probe[0]}, warmed ahead: {measured.probe[1]} forwards")
    return slowest


async def main_async(args) -> int:
    from playwright.async_api import async_playwright

    from txviz.lecture.rooms.redis_server import installed, redis_server
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
                    browser, f"http://127.0.0.1:{port}", followers, args.nexts, [server.pid], count_file
                )
            finally:
                stop_server(server)
        alone = measured[0]
        print(
            "\n## baseline: the lecturer alone (the console and the projector window, 0 followers, a fresh server)"
        )
        print(f"presenter after next alone = {statistics.median(s.console_s for s in alone.steps):.2f} s")
        for step in alone.steps:
            print(f"next to step {step.k} ({step.step.page}): presenter {step.console_s:.2f} s, "
                  f"{_projector(step)}, "
                  f"{step.at_arrival} forwards until the projector's bar arrived, {step.ahead} more after")  # fmt: skip
        for frozen in alone.frozen:
            print(f"the projector window froze at {frozen} (reloaded)")
        one_server = measured[args.followers]
        one = report("one server (rooms in memory)", args.followers, one_server, True, alone)
        if args.replicas and installed():
            with (
                redis_server() as redis,
                cluster(args.replicas, log_folder=folder / "replicas", redis_url=redis.url) as running,
            ):
                pids = [p.pid for p in running.replicas.values()]
                spread = await room(
                    browser, running.url, args.followers, args.nexts, pids, None, replicas=args.replicas
                )
            report(f"{args.replicas} replicas with Redis", args.followers, spread, False, alone)
        elif args.replicas:
            print("\nreplicas skipped: redis-server is missing")
        await browser.close()
    print(f"\nload after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min); logs in {folder}")
    presenter = [step.console_s for step in one_server.steps]
    print(f"presenter after next = {statistics.median(presenter):.2f} s")  # one server, the followers there
    print(f"slowest of {args.followers} followers after next = {statistics.median(one):.2f} s")
    return 0


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m txviz bench lecture", description=__doc__)
    parser.add_argument("--followers", type=int, default=30)
    parser.add_argument("--nexts", type=int, default=3, help="lecturer's nexts timed (>= 3 for a median)")
    parser.add_argument("--replicas", type=int, default=2,
                        help="replicas behind HAProxy sharing Redis for the second room (0: none)")  # fmt: skip
    parser.add_argument("--no-replicas", dest="replicas", action="store_const", const=0)
    parser.add_argument("--no-floor", dest="floor", action="store_false", help="skip the bare page's floor")
    parser.add_argument(
        "--poll", type=float, default=None, help="the followers' poll in s (TXVIZ_ROOM_POLL_S)"
    )
    args = parser.parse_args(argv)
    if args.followers < 1 or args.nexts < 1:
        parser.error("--followers and --nexts must be 1 or more")
    if args.replicas < 0:
        parser.error("--replicas must be 0 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if args.poll:
        os.environ["TXVIZ_ROOM_POLL_S"] = str(args.poll)  # every server this run starts inherits it
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("error: the lecture benchmark needs playwright (requirements-dev.txt)", file=sys.stderr)
        return 1
    return asyncio.run(main_async(args))
