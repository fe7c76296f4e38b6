"""Load: concurrent browser sessions explore attention and generate against one local app.

Starts `streamlit run app.py` on 127.0.0.1, measures one lone session as the baseline, then drives
N sessions (Chromium contexts) at once for a bounded time, then again while one of them uploads a
~19 MB text file. Each session types its own words and checks that it sees them, and no other
session's, in its heatmap and its generated text. Reports the slowest response, errors, the
server's peak memory and any leak between sessions; the server is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from txviz.core import paths

log = logging.getLogger(__name__)

ROOT = paths.ROOT
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",  # nothing but the local app
]
# Whole MiniLM word pieces (lower case), two per session, no word shared between sessions.
WORDS = [
    ("apple", "river"),
    ("tiger", "piano"),
    ("castle", "winter"),
    ("doctor", "garden"),
    ("engine", "forest"),
    ("silver", "bridge"),
    ("rabbit", "ocean"),
    ("pencil", "desert"),
    ("violin", "harbor"),
    ("candle", "meadow"),
]
TEMPLATES = (
    "The {0} stood by the {1} all day.",
    "A {1} is older than any {0} we know.",
    "Why did the {0} follow the {1} home?",
)
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
ACTION_TIMEOUT_S = 240.0
UPLOAD_BYTES = 19 * 1024 * 1024  # under the app's 20 MB upload limit (.streamlit/config.toml)
TICKS_HAVE = """([words]) => {
    const chart = document.querySelector('[data-testid="stPlotlyChart"]');
    if (!chart) return false;
    const ticks = [...chart.querySelectorAll('.xtick text')].map(e => e.textContent);
    return words.every(w => ticks.includes(w));
}"""
TICKS = """() => [...(document.querySelector('[data-testid="stPlotlyChart"]')
    ?.querySelectorAll('.xtick text') ?? [])].map(e => e.textContent)"""


@dataclass
class Report:
    """What every session saw in one run."""

    times: dict[str, list[float]] = field(default_factory=dict)  # action -> seconds each
    errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)

    def add(self, action: str, seconds: float) -> None:
        self.times.setdefault(action, []).append(seconds)

    def slowest(self) -> tuple[str, float]:
        return max(((a, max(t)) for a, t in self.times.items()), key=lambda x: x[1], default=("-", 0.0))

    def all_times(self) -> list[float]:
        return [t for ts in self.times.values() for t in ts]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, log_path: Path) -> subprocess.Popen:
    """The app on 127.0.0.1:port, its output in log_path; raises if it is not up in 120 s."""
    command = [
        sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
        "--server.address", "127.0.0.1", "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    return launch(command, port, log_path)


def server_env() -> dict[str, str]:
    """The environment an app server of a benchmark runs in: offline, unbuffered."""
    return {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def launch(
    command: list[str], port: int, log_path: Path, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """Start an app server's ``command``, its output in log_path; raises if it is not up in 120 s."""
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process in stop_server
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env or server_env()
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).status == 200:
                return process
        except OSError:
            time.sleep(0.5)
    stop_server(process)
    raise RuntimeError(f"the app did not start in 120 s; see {log_path}")


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


class MemoryWatch:
    """Peak resident memory of a process and its children, sampled in a thread."""

    def __init__(self, pid: int, interval_s: float = 0.25) -> None:
        import psutil

        self._process, self._interval = psutil.Process(pid), interval_s
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> int:
        import psutil

        total = 0
        for p in [self._process, *self._process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):  # a child may end between listing and reading
                total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            self._stop.wait(self._interval)

    def reset(self) -> None:
        """Start a new peak from the present memory."""
        self.peak = self._rss()

    def __enter__(self) -> MemoryWatch:
        self.peak = self._rss()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


async def settle(page, timeout_s: float = ACTION_TIMEOUT_S) -> None:
    """Wait until the script has finished and stayed finished a moment (reruns start late)."""
    for _ in range(2):
        await page.wait_for_selector(IDLE, state="attached", timeout=timeout_s * 1000)
        await page.wait_for_timeout(500)
    await page.wait_for_selector(IDLE, state="attached", timeout=timeout_s * 1000)


class Session:
    """One browser session with its own words; records response times, errors and leaks."""

    def __init__(self, index: int, page, base: str, report: Report, n_sessions: int) -> None:
        self.index, self.page, self.base, self.report = index, page, base, report
        self.words = WORDS[index]
        self.others = [w for j, ws in enumerate(WORDS[:n_sessions]) if j != index for w in ws]
        self.markers = [f"q{j}x{j}z" for j in range(n_sessions)]
        self.marker = self.markers[index]
        self.step = 0

    async def timed(self, action: str, coro) -> bool:
        """Run one action; its time goes to the report, or an error if it fails."""
        start = time.perf_counter()
        try:
            await asyncio.wait_for(coro, ACTION_TIMEOUT_S)
        except Exception as error:  # noqa: BLE001 - every failure is a result of the benchmark
            log.debug("session %d %s failed", self.index, action, exc_info=True)  # the traceback, on request
            self.report.errors.append(f"session {self.index} {action}: {type(error).__name__} {error}"[:300])
            return False
        self.report.add(action, time.perf_counter() - start)
        if await self.page.locator('[data-testid="stException"]').count():
            self.report.errors.append(f"session {self.index} {action}: exception box in the page")
            return False
        return True

    async def check_ticks(self, action: str) -> None:
        ticks = await self.page.evaluate(TICKS)
        seen = sorted(set(ticks) & set(self.others))
        if seen:
            self.report.leaks.append(f"session {self.index} {action}: saw {seen} of other sessions")

    async def open(self, path: str) -> None:
        await self.page.goto(f"{self.base}/{path}", timeout=ACTION_TIMEOUT_S * 1000)
        await self.page.wait_for_selector('[data-testid="stApp"] h1', timeout=ACTION_TIMEOUT_S * 1000)
        await settle(self.page)

    async def type_text(self) -> None:
        text = TEMPLATES[self.step % len(TEMPLATES)].format(*self.words)
        box = self.page.get_by_label("Text", exact=True)
        await box.fill(text)
        await box.press("Control+Enter")
        await self.page.wait_for_function(TICKS_HAVE, arg=[list(self.words)], timeout=ACTION_TIMEOUT_S * 1000)
        await settle(self.page)
        if await box.input_value() != text:
            self.report.leaks.append(f"session {self.index}: its text box holds another text")

    async def upload_text(self, data: bytes) -> None:
        await self.page.get_by_text("Upload a .txt file", exact=True).click()
        await settle(self.page)
        chooser = self.page.locator('[data-testid="stFileUploader"] input[type="file"]').first
        with tempfile.TemporaryDirectory() as folder:  # a path streams; a buffer goes base64 over the pipe
            path = Path(folder) / f"huge-{self.index}.txt"
            path.write_bytes(data)
            await chooser.set_input_files(path)
            await self.page.wait_for_function(
                TICKS_HAVE, arg=[list(self.words)], timeout=ACTION_TIMEOUT_S * 1000
            )  # the file stays on disk until the page has read it
        await settle(self.page)

    async def generate(self) -> None:
        prompt = f"{self.marker}: write a few words about the {self.words[0]}."
        box = self.page.get_by_label("Prompt", exact=True)
        await box.fill(prompt)
        await box.press("Control+Enter")
        await settle(self.page)
        await self.page.get_by_role("button", name="Generate", exact=True).click()
        await self.page.get_by_text("prompt tokens.").first.wait_for(timeout=ACTION_TIMEOUT_S * 1000)
        await settle(self.page)
        shown = await self.page.locator('[data-testid="stCode"]').first.inner_text()
        if self.marker not in shown:
            self.report.errors.append(f"session {self.index} generate: its prompt is not in the text")
        seen = [m for m in self.markers if m != self.marker and m in shown]
        if seen:
            self.report.leaks.append(f"session {self.index} generate: saw prompts {seen} of other sessions")

    async def set_max_tokens(self, n: int) -> None:
        box = self.page.get_by_label("Max new tokens", exact=True)
        await box.fill(str(n))
        await box.press("Enter")
        await settle(self.page)

    async def round(self, new_tokens: int, upload: bytes | None = None) -> None:
        """One visit to each page: explore (typed or uploaded text), then generate."""
        if await self.timed("open explorer", self.open("Attention_Explorer")):
            if upload is not None:
                ok = await self.timed("upload 19 MB .txt", self.upload_text(upload))
            else:
                ok = await self.timed("explore own text", self.type_text())
            if ok:
                await self.check_ticks("explore")
        if await self.timed("open generation", self.open("Live_Generation")):
            await self.timed("set max tokens", self.set_max_tokens(new_tokens))
            await self.timed("generate", self.generate())
        self.step += 1


async def drive(base: str, n_sessions: int, seconds: float, new_tokens: int, upload: bytes | None):
    """n sessions loop over rounds until the deadline; session 0 uploads when given a file."""
    from playwright.async_api import async_playwright

    report = Report()
    deadline = time.monotonic() + seconds

    async def run_session(browser, index: int) -> None:
        context = await browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(ACTION_TIMEOUT_S * 1000)  # a busy machine is slow, not broken
        page = await context.new_page()
        page.on("dialog", lambda d: report.errors.append(f"session {index}: a dialog opened: {d.message}"))
        session = Session(index, page, base, report, n_sessions)
        try:
            while session.step == 0 or time.monotonic() < deadline:  # at least one round each
                await session.round(new_tokens, upload if index == 0 else None)
        finally:
            await context.close()

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        tasks = [asyncio.create_task(run_session(browser, i)) for i in range(n_sessions)]
        # a round started just before the deadline may finish; nothing runs past this bound
        done, pending = await asyncio.wait(tasks, timeout=seconds + 3 * ACTION_TIMEOUT_S)
        for task in pending:
            task.cancel()
            report.errors.append("a session was still busy at the hard stop and was cancelled")
        for task in done:
            if task.exception():
                report.errors.append(f"a session failed: {task.exception()!r}"[:300])
        await browser.close()
    return report


def huge_text(words: tuple[str, str], size: int = UPLOAD_BYTES) -> bytes:
    """size bytes of UTF-8 text made of a session's own sentences."""
    sentence = (TEMPLATES[0].format(*words) + " ").encode()
    return (sentence * (size // len(sentence) + 1))[:size]


def summary_row(name: str, sessions: int, seconds: float, report: Report, peak: int, lone: float) -> str:
    action, slowest = report.slowest()
    times = report.all_times()
    median = statistics.median(times) if times else 0.0
    ratio = f"{slowest / lone:.1f}x" if lone else "-"
    return (
        f"| {name} | {sessions} | {seconds:.0f} s | {len(times)} | {median:.1f} s | "
        f"{slowest:.1f} s ({action}) | {ratio} | {len(report.errors)} | {peak / 1e9:.2f} GB | "
        f"{'none' if not report.leaks else len(report.leaks)} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench load", description=__doc__)
    parser.add_argument(
        "--sessions", type=int, default=8, help=f"browser: at most {len(WORDS)}; inprocess: at most 30"
    )
    parser.add_argument(
        "--clients",
        choices=("browser", "inprocess"),
        default="browser",
        help="Chromium sessions against a served app, or threads through the app's generation engine",
    )
    parser.add_argument("--model", default="smollm2", help="inprocess: the decoder to generate with")
    parser.add_argument("--seconds", type=float, default=120, help="length of each loaded run")
    parser.add_argument(
        "--tokens", type=int, default=None, help="new tokens per generation (browser: 4, inprocess: 64)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="inprocess: torch threads (1: steady on a shared machine; 0 keeps torch's default)",
    )
    parser.add_argument("--no-upload-run", action="store_true", help="skip the run with a huge upload")
    args = parser.parse_args(argv)
    if args.clients == "inprocess":
        from txviz.bench.engine_clients import SUBJECTS, main_inprocess
        from txviz.core.config import ServerConfig

        if not 1 <= args.sessions <= len(SUBJECTS):
            parser.error(f"--sessions must be 1 to {len(SUBJECTS)}")
        tokens = 64 if args.tokens is None else max(args.tokens, 16)
        return main_inprocess(args.model, args.sessions, tokens, ServerConfig().max_batch, args.threads)
    args.tokens = 4 if args.tokens is None else args.tokens
    if not 1 <= args.sessions <= len(WORDS):
        parser.error(f"--sessions must be 1 to {len(WORDS)}")
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("error: the load benchmark needs playwright (requirements-dev.txt)", file=sys.stderr)
        return 2

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the server
    log = Path(tempfile.mkdtemp(prefix="txviz-load-")) / "streamlit.log"
    port = free_port()
    server = start_server(port, log)
    base = f"http://127.0.0.1:{port}"
    plan = [("warm-up (first model loads)", 1, 0.0, None), ("one session, warm (baseline)", 1, 0.0, None)]
    plan.append((f"{args.sessions} sessions", args.sessions, args.seconds, None))
    if not args.no_upload_run:
        plan.append(
            (
                f"{args.sessions} sessions, one uploading 19 MB",
                args.sessions,
                args.seconds,
                huge_text(WORDS[0]),
            )
        )
    runs = []  # (name, sessions, seconds, report, peak bytes)
    try:
        with MemoryWatch(server.pid) as memory:
            for name, n, seconds, upload in plan:
                memory.reset()
                report = asyncio.run(drive(base, n, seconds, args.tokens, upload))
                runs.append((name, n, seconds, report, memory.peak))
                print(f"{name}: done, {len(report.errors)} errors", file=sys.stderr, flush=True)
    finally:
        stop_server(server)
    lone = runs[1][3].slowest()[1]
    print(f"## load: browser sessions against one app on 127.0.0.1 (server log: {log})\n")
    print(
        "| run | sessions | length | actions | median response | slowest response | ratio slowest / lone "
        "| errors | server peak memory | leaks between sessions |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, n, seconds, report, peak in runs:
        print(summary_row(name, n, seconds, report, peak, lone))
    failed = False
    for name, _, _, report, _ in runs:
        for line in report.errors + report.leaks:
            failed = True
            print(f"- {name}: {line}")
    slowest: dict[str, float] = {}
    for _, _, _, report, _ in runs[1:]:
        for action, times in report.times.items():
            slowest[action] = max(slowest.get(action, 0.0), *times)
    print("\nslowest per action: " + ", ".join(f"{a} {t:.1f} s" for a, t in sorted(slowest.items())))
    print(
        "Response = from the click or key press until the page shows the session's own result and "
        "the script is idle; memory = resident set of the server and its children."
    )
    loaded_gen = max(runs[2][3].times.get("generate", [0.0]))
    lone_gen = max(runs[1][3].times.get("generate", [0.0])) or float("nan")
    print(
        f"slowest generation under load / lone generation = {loaded_gen / lone_gen:.2f}x "
        f"({args.sessions} sessions)"
    )
    return 1 if failed else 0
