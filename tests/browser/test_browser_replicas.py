"""Two replicas behind HAProxy on 127.0.0.1: sessions stick, work through the proxy, and survive
the loss of the other replica.

Each browser session is pinned by the balancer's cookie; every HTTP response names the replica
that served it (X-Txviz-Replica). Generation (the websocket) and an upload (a PUT that must reach
the session's own replica) run through the proxy. Stopping one replica loses its sessions only:
the other replica's sessions go on, and a reload of a lost one starts again on the survivor.
"""

from __future__ import annotations

import time

import pytest
from conftest import ARTIFACTS, page_url, screenshot, wait_for_app

from txviz.bench.load import TICKS_HAVE
from txviz.serving.replicas import cluster

pytestmark = pytest.mark.browser

SESSIONS = 4
WAIT_MS = 240_000
HEADER = "x-txviz-replica"
COOKIE = "TXVIZ_REPLICA"


class Session:
    """One browser context through the balancer, with every replica that answered it."""

    def __init__(self, browser, base: str, index: int):
        self.base, self.index, self.seen = base, index, []
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.set_default_timeout(WAIT_MS)
        self.context.on("response", self._answered)
        self.page = self.context.new_page()

    def _answered(self, response) -> None:
        if response.url.startswith(self.base) and HEADER in response.headers:
            self.seen.append(response.headers[HEADER])

    @property
    def replica(self) -> str:
        cookies = {c["name"]: c["value"] for c in self.context.cookies(self.base)}
        return cookies[COOKIE]

    def open(self, script: str) -> str:
        """Open a page; the replica that served the document itself (assets may come from cache)."""
        response = self.page.goto(page_url(self.base, script))
        wait_for_app(self.page, WAIT_MS)
        return response.headers[HEADER]

    def generate(self, prompt: str, reload: bool = True) -> None:
        """Generate two tokens; reload=False generates in the session already open (its state kept)."""
        if reload:
            self.open("pages/8_Live_Generation.py")
        box = self.page.get_by_label("Prompt")
        box.fill(prompt)
        box.press("Control+Enter")
        tokens = self.page.get_by_role("spinbutton", name="Max new tokens")
        tokens.fill("2")
        tokens.press("Enter")
        wait_for_app(self.page, WAIT_MS)
        self.page.get_by_role("button", name="Generate").click()
        self.page.wait_for_selector("text=Replay a step", timeout=WAIT_MS)
        wait_for_app(self.page, WAIT_MS)
        assert prompt in self.page.locator('[data-testid="stCode"]').first.inner_text()

    def upload(self, words: tuple[str, str], folder) -> None:
        self.open("pages/2_Attention_Explorer.py")
        self.page.get_by_text("Upload a .txt file", exact=True).click()
        wait_for_app(self.page, WAIT_MS)
        path = folder / f"session-{self.index}.txt"
        path.write_text(f"The {words[0]} stood by the {words[1]}.")
        self.page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(path)
        self.page.wait_for_function(TICKS_HAVE, arg=[list(words)], timeout=WAIT_MS)
        wait_for_app(self.page, WAIT_MS)


def test_sessions_stick_work_through_the_proxy_and_outlive_the_other_replica(tmp_path, _browser):
    # the session's one browser: a second sync Playwright in the same process is refused
    sessions: list[Session] = []
    with cluster(2, log_folder=ARTIFACTS / "replicas") as running:
        try:
            sessions += [Session(_browser, running.url, i) for i in range(SESSIONS)]
            for session in sessions:
                session.open("pages/8_Live_Generation.py")
            by_replica = {}
            for session in sessions:
                by_replica.setdefault(session.replica, []).append(session)
            assert sorted(by_replica) == ["replica1", "replica2"], "the balancer used one replica only"

            # generation and an upload on each replica, through the proxy
            for name, (first, *_) in sorted(by_replica.items()):
                first.generate(f"A short note from {name}")
                first.upload(("apple", "river") if name == "replica1" else ("tiger", "piano"), tmp_path)
            for session in sessions:
                assert session.seen and set(session.seen) == {session.replica}, "a session changed replica"

            # stop replica1: the balancer's health check takes it out within a few seconds
            lost, kept = by_replica["replica1"], by_replica["replica2"]
            running.stop_replica("replica1")
            time.sleep(8)  # health checks every 2 s, down after 2 failures, a margin for a loaded machine
            survivor, idle = kept[0], kept[1:]
            assert survivor.page.evaluate(TICKS_HAVE, [["tiger", "piano"]])  # its upload still shown
            for session in idle:  # the survivors' open sessions go on, on their own replica
                session.generate(f"Still here, session {session.index}", reload=False)
                assert set(session.seen) == {"replica2"}
            for session in lost:  # a lost session starts again on the survivor
                assert session.open("pages/8_Live_Generation.py") == "replica2" == session.replica
            screenshot(survivor.page, "replicas-survivor")
        finally:
            for session in sessions:
                session.context.close()
