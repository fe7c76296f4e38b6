"""A browser window's last websocket messages, decoded one line each: what the server told the frontend
just before it failed. `python -m txviz.app.testing.ws_trace FILE` reads the frames `bench lecture` kept (JSON
lines: seconds, "<" received or ">" sent, the frame in base64) and prints them."""

from __future__ import annotations

import base64
import json
import sys

from txviz.app.streamlit_private import wire


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


def lines(path: str) -> list[str]:
    """Each kept frame of the file at ``path`` as a line."""
    out = []
    with open(path) as kept:
        for row in kept:
            seconds, way, frame = json.loads(row)
            payload = base64.b64decode(frame)
            line = forward_line(payload) if way == "<" else back_line(payload)
            if line:
                out.append(f"{seconds:8.3f} {way} {line}")
    return out


if __name__ == "__main__":
    print("\n".join(lines(sys.argv[1])))
