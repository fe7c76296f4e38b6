"""The last messages a browser window's websocket carried, decoded: what the server told the frontend just
before it failed (`bench lecture` prints them when a window freezes)."""

from __future__ import annotations

import collections
import time

from txviz.app.streamlit_private import wire

KEPT = 300


class Trace:
    """A ring of one window's last messages, one line each, oldest first."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT)
        self.start = time.monotonic()

    def attach(self, socket) -> None:
        """Record what ``socket`` (a Playwright WebSocket) receives and sends."""
        socket.on("framereceived", lambda payload: self._add("<", forward_line(payload)))
        socket.on("framesent", lambda payload: self._add(">", back_line(payload)))

    def _add(self, way: str, line: str | None) -> None:
        if line:
            self.lines.append(f"{time.monotonic() - self.start:8.3f} {way} {line}")

    def text(self) -> str:
        return f"the last {len(self.lines)} messages of {self.who}'s websocket:\n" + "\n".join(self.lines)


def _short(value: str) -> str:
    return value[:8]


def forward_line(payload) -> str | None:
    """One server-to-browser message as a line: run starts, deltas with their paths, run ends."""
    if isinstance(payload, str):
        return None
    ForwardMsg = wire().ForwardMsg  # noqa: N806 - the proto's own name
    message = ForwardMsg()
    message.ParseFromString(payload)
    kind = message.WhichOneof("type")
    run = message.metadata.run
    who = f"run={_short(run.script_run_id)} fragments={[_short(f) for f in run.fragment_ids]}"
    if kind == "new_session":
        return f"new_session page={_short(message.new_session.page_script_hash)} {who}"
    if kind == "delta":
        delta = message.delta
        what = delta.WhichOneof("type")
        inner = getattr(delta, what).WhichOneof("type") if what in ("new_element", "add_block") else ""
        path = list(message.metadata.delta_path)
        return f"delta {what}:{inner} path={path} fragment={_short(delta.fragment_id)} {who}"
    if kind == "script_finished":
        return f"script_finished {ForwardMsg.ScriptFinishedStatus.Name(message.script_finished)} {who}"
    if kind == "navigation":
        return f"navigation page={_short(message.navigation.page_script_hash)}"
    if kind == "auto_rerun":
        return f"auto_rerun every {message.auto_rerun.interval} s fragment={_short(message.auto_rerun.fragment_id)}"
    if kind == "ref_hash":
        return f"ref_hash path={list(message.metadata.delta_path)}"
    return kind


def back_line(payload) -> str | None:
    """One browser-to-server message as a line: which page and fragment a rerun asks for."""
    if isinstance(payload, str):
        return None
    message = wire().BackMsg()
    message.ParseFromString(payload)
    kind = message.WhichOneof("type")
    if kind == "rerun_script":
        rerun = message.rerun_script
        return (f"rerun_script page={_short(rerun.page_script_hash)} fragment={_short(rerun.fragment_id)} "
                f"auto={rerun.is_auto_rerun}")  # fmt: skip
    return kind
