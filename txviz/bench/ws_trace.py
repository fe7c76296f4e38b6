"""The last frames a browser window's websocket carried, kept for when the window freezes; decoded by
`txviz.app.testing.ws_trace` in its own process (Streamlit's protos are the app's to read)."""

from __future__ import annotations

import base64
import collections
import json
import subprocess
import sys
import tempfile
import time

KEPT = 300


class Trace:
    """A ring of one window's last frames, oldest first."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.frames: collections.deque[tuple[float, str, bytes]] = collections.deque(maxlen=KEPT)
        self.start = time.monotonic()

    def attach(self, socket) -> None:
        """Keep what ``socket`` (a Playwright WebSocket) receives and sends."""
        socket.on("framereceived", lambda payload: self._add("<", payload))
        socket.on("framesent", lambda payload: self._add(">", payload))

    def _add(self, way: str, payload) -> None:
        if isinstance(payload, bytes):
            self.frames.append((time.monotonic() - self.start, way, payload))

    def text(self) -> str:
        """The kept frames, decoded one line each."""
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as kept:
            for seconds, way, payload in self.frames:
                kept.write(json.dumps([seconds, way, base64.b64encode(payload).decode()]) + "\n")
        decoded = subprocess.run([sys.executable, "-m", "txviz.app.testing.ws_trace", kept.name],
                                 capture_output=True, text=True, check=False)  # fmt: skip
        body = decoded.stdout if decoded.returncode == 0 else f"(not decoded: {decoded.stderr.strip()})"
        return (
            f"the last {len(self.frames)} messages of {self.who}'s websocket (kept in {kept.name}):\n{body}"
        )
