"""A room's steps computed ahead of time: a headless session opens a step's page on this very server, so
every ``ui.cached`` result of the page is filled before the class arrives.

Why a real session over the app's own websocket, and not a per-page ``warm(settings)`` hook or AppTest:
the page itself decides what it computes (no second list of cached calls to keep in step with each page),
the run goes through Streamlit's runtime like a browser's (AppTest replaces the runtime and patches
global config, so it cannot run inside a live server), and the results land in the same caches every
follower reads. It costs one short-lived session per step, in a background thread.

Behind HTTPS (Streamlit's own ``server.sslCertFile`` and ``server.sslKeyFile`` set) the session speaks
``wss://`` to the server's loopback address, its certificate unchecked there only (``headless.tls_for``
says why). Chosen over running the page in-process: that would need an AppSession built by hand from
more of Streamlit's internals (AppTest is unsafe in a live server), where a loopback session is what a
browser's is, TLS included. The protocol is Streamlit's private one, so a warm-up happens only where
``txviz.app.streamlit_private`` found it intact (and is not switched off); otherwise the step's first
visitor computes it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from urllib.parse import urlencode

import streamlit as st

from txviz.app import streamlit_private
from txviz.app.lecture.headless import Session
from txviz.lecture.steps import Step

log = logging.getLogger(__name__)
WARM_AGAIN_S = 600.0  # a step warmed this recently is not warmed again (its cache entries are still there)
RUN_TIMEOUT_S = 600.0  # a page's first run may load a model
_LOCK = threading.Lock()
_WARMED: dict[str, float] = {}  # a step (JSON) -> when its warm-up began, for the whole server


def own_address() -> str:
    """This server's own address (scheme, port and base path it serves on), as seen from inside."""
    host = st.get_option("server.address") or "127.0.0.1"
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"  # an IPv6 address in a URL
    scheme = "https" if st.get_option("server.sslCertFile") and st.get_option("server.sslKeyFile") else "http"
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{scheme}://{host}:{st.get_option('server.port')}" + (f"/{base}" if base else "")


def step_query(step: Step) -> str:
    """The query string a follower's page switch gives the step's page: its settings, JSON-encoded."""
    return urlencode(step.query_params())


def warm(steps: list[Step], base: str | None = None) -> threading.Thread | None:
    """Open each step's page (with its settings) headlessly on this server, one after the other, in a
    background thread; a step warmed within WARM_AGAIN_S is skipped. Returns the thread, if one started."""
    if base is None and not st.context.url:
        return None  # no browser address: an AppTest, with no server of its own to open pages on
    if not streamlit_private.enabled():
        return None  # the protocol is not known to hold here: the first visitor computes the step
    now = time.monotonic()
    with _LOCK:
        fresh = []
        for step in steps:
            name = step.key
            if step.page and now - _WARMED.get(name, -WARM_AGAIN_S) >= WARM_AGAIN_S:
                _WARMED[name] = now
                fresh.append(step)
    if not fresh:
        return None
    address = base or own_address()
    thread = threading.Thread(target=_run, args=(address, fresh), name="txviz-room-warmup", daemon=True)
    thread.start()
    return thread


def _run(base: str, steps: list[Step]) -> None:
    for step in steps:
        try:
            asyncio.run(open_once(base, step.page, step_query(step)))
        except Exception:  # a warm-up that fails costs the class nothing: the first arrival computes it
            log.warning("Warming up %s at %s failed; its first visitor computes it", step.page, base,
                        exc_info=True)  # fmt: skip
            with _LOCK:
                _WARMED.pop(step.key, None)


async def open_once(base: str, page: str, query: str, timeout: float = RUN_TIMEOUT_S) -> None:
    """One full run of the page (its name in the page map: its address), then the session closes."""
    session = Session(base, page, query)
    await session.open()
    try:
        end = time.monotonic() + timeout
        while session.runs_done < 1:
            if time.monotonic() > end:
                raise TimeoutError(f"{page} did not finish its first run")
            await asyncio.sleep(0.05)
    finally:
        await session.close()
