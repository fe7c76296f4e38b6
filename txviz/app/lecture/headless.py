"""A session without a browser: it speaks Streamlit's own protocol over the app's websocket.

It sends what the frontend sends (a ``rerun_script`` BackMsg with the page and its query string, and
the widget states for a click) and re-triggers every ``run_every`` fragment on its timer as the frontend
does (the server only announces the fragment and its interval in an ``auto_rerun`` ForwardMsg), so the
server runs exactly what it runs for a browser's session. The room warms a step's page with it, and the
lecture benchmark's followers are made of it. The messages are Streamlit's own protos, reached through
``txviz.app.streamlit_private`` (which checks their fields at start-up).

An ``https://`` base is spoken to over ``wss://``. To this machine's own server (a loopback address) the
certificate is not checked: it names the server's public host, or is self-signed, never 127.0.0.1, and
a loopback connection never leaves the machine, so there is no one in between to check it against. Any
other host's certificate is checked as usual.
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
import time
from collections.abc import Callable
from urllib.parse import urlparse

import websockets

from txviz import page_map
from txviz.app.lecture.placement import Places
from txviz.app.streamlit_private import wire


class Session:
    """One headless session of the app at ``base`` (http:// or https://host:port), opened on a page by its
    URL name.

    ``texts`` keeps the first time (time.monotonic) each markdown or caption body arrived; ``on_text`` is
    called with every body as it arrives.
    """

    def __init__(self, base: str, page: str = "", query: str = "", cookie: str = "",
                 on_text: Callable[[str], None] | None = None):  # fmt: skip
        self.base, self.page, self.query, self.cookie = base.rstrip("/"), page, query, cookie
        self.page_hash = ""
        self.texts: dict[str, float] = {}
        self.on_text = on_text
        self.widgets: dict = {}  # widget id -> WidgetState: kept values, sent with every rerun as the frontend does
        self.labels: dict[str, str] = {}  # a widget's label -> its id, from the last deltas
        self.options: dict[str, list[str]] = {}  # a radio's label -> its options as shown
        self.fragment_of: dict[str, str] = {}  # a widget's label -> the fragment that drew it ("" if none)
        self.runs_done = 0  # full runs finished
        self.exceptions: list[str] = []  # the message of every exception a run showed
        self.html: list[str] = []  # every st.html body (a script that asks the browser to keep a cookie)
        self.places = Places()  # where a browser would put each element; .stopped: where it would stop
        self._socket = None
        self._tasks: list[asyncio.Task] = []
        self._timers: dict[str, asyncio.Task] = {}
        self._registered: set[str] = set()
        self._finished = asyncio.Event()

    async def open(self) -> Session:
        """Connect and ask for the page's first run, as a browser's first load does."""
        parsed = urlparse(self.base)
        headers = {"Cookie": self.cookie} if self.cookie else None
        secure = parsed.scheme == "https"
        tls = {"ssl": tls_for(parsed.hostname or "")} if secure else {}  # ws:// takes no ssl argument
        self._socket = await websockets.connect(
            f"{'wss' if secure else 'ws'}://{parsed.netloc}{parsed.path}/_stcore/stream",
            subprotocols=["streamlit"],
            additional_headers=headers,
            max_size=None,
            open_timeout=60,
            **tls,
        )
        self._tasks.append(asyncio.ensure_future(self._read()))
        await self.rerun()
        return self

    async def rerun(self, fragment_id: str = "", auto: bool = False, triggers: dict | None = None) -> None:
        """A rerun request: the whole page, or one fragment; ``triggers`` are one-shot values (a click)."""
        back = wire().BackMsg()
        state = back.rerun_script
        state.query_string = self.query
        state.page_script_hash = self.page_hash
        if not self.page_hash:
            state.page_name = self.page
        state.fragment_id = fragment_id
        state.is_auto_rerun = auto
        state.context_info.url = f"{self.base}/{self.page}" + (f"?{self.query}" if self.query else "")
        state.widget_states.widgets.extend(self.widgets.values())
        for widget_id, value in (triggers or {}).items():
            trigger = state.widget_states.widgets.add()
            trigger.id, trigger.trigger_value = widget_id, value
        self._finished.clear()
        await self._socket.send(back.SerializeToString())

    async def choose(self, label: str, option: str, fragment_id: str = "") -> None:
        """Pick ``option`` (its text as shown) of the radio labelled ``label``; its run follows."""
        kept = wire().WidgetState(
            id=self.labels[label], string_value=option
        )  # a radio sends the option's text
        self.widgets[kept.id] = kept
        await self.rerun(fragment_id)

    async def click(self, label: str, fragment_id: str = "") -> None:
        """Press the button labelled ``label``."""
        await self.rerun(fragment_id, triggers={self.labels[label]: True})

    async def finished(self, timeout: float = 300.0) -> None:
        """Until the run under way (whole page or fragment) has finished."""
        await asyncio.wait_for(self._finished.wait(), timeout)

    async def wait_for(self, wanted: Callable[[str], bool], timeout: float = 300.0) -> float:
        """The first time (time.monotonic) a text with ``wanted(text)`` arrived, waiting for it if need be."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for text, when in list(self.texts.items()):
                if wanted(text):
                    return when
            await asyncio.sleep(0.02)
        raise TimeoutError("the text never arrived")

    @property
    def fragments(self) -> list[str]:
        """The run_every fragments this session's timers re-trigger."""
        return list(self._timers)

    async def close(self) -> None:
        for task in [*self._tasks, *self._timers.values()]:
            task.cancel()
        if self._socket is not None:
            await self._socket.close()

    async def _read(self) -> None:
        async for data in self._socket:
            msg = wire().ForwardMsg()
            msg.ParseFromString(data)
            self._take(msg)

    def _take(self, msg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.places.new_session(msg.new_session.page_script_hash, bool(msg.metadata.run.fragment_ids))
            self.page_hash = msg.new_session.page_script_hash or self.page_hash
            self._registered = set()
        elif kind == "navigation":  # the page st.navigation ran: what a browser names in its next request
            self.places.navigation(msg.navigation.page_script_hash)
            self.page_hash = msg.navigation.page_script_hash or self.page_hash
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string  # a page switch or st.query_params
        elif kind == "auto_rerun":
            self._every(msg.auto_rerun.fragment_id, msg.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            for fragment_id in msg.stop_auto_rerun.fragment_ids:
                self._stop(fragment_id)
        elif kind == "delta":
            if msg.delta.WhichOneof("type") in ("new_element", "add_block"):
                self.places.delta(msg.metadata.delta_path, msg.delta.fragment_id)
            if msg.delta.WhichOneof("type") == "new_element":
                self._element(msg.delta.new_element, msg.delta.fragment_id)
        elif kind == "script_finished":
            if msg.script_finished == wire().ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY:
                self.runs_done += 1
                for fragment_id in set(self._timers) - self._registered:
                    self._stop(fragment_id)  # the page no longer has it, as the frontend drops it
            self._finished.set()

    def _element(self, element, fragment_id: str = "") -> None:
        kind = element.WhichOneof("type")
        if kind in ("markdown", "alert"):  # text, and the info, warning and error boxes
            body = getattr(element, kind).body
            self.texts.setdefault(body, time.monotonic())
            if self.on_text:
                self.on_text(body)
        elif kind == "exception":
            self.exceptions.append(element.exception.message)
        elif kind == "html":
            self.html.append(element.html.body)
        elif kind in ("radio", "button"):
            widget = getattr(element, kind)
            self.labels[widget.label] = widget.id
            self.fragment_of[widget.label] = fragment_id
            if kind == "radio":
                self.options[widget.label] = list(widget.options)

    def _every(self, fragment_id: str, interval: float) -> None:
        """Re-trigger the fragment every ``interval`` s, as the frontend's timer does."""
        self._registered.add(fragment_id)
        if fragment_id in self._timers:
            return

        async def tick() -> None:
            while True:
                await asyncio.sleep(interval)
                await self.rerun(fragment_id, auto=True)

        self._timers[fragment_id] = asyncio.ensure_future(tick())

    def _stop(self, fragment_id: str) -> None:
        timer = self._timers.pop(fragment_id, None)
        if timer is not None:
            timer.cancel()


def address_name(page_script: str) -> str:
    """pages/2_Attention_Explorer.py -> Attention_Explorer, the name a browser's address has (the page
    map's); a script outside the map (app.py) by its stem."""
    page = page_map.BY_FILE.get(page_script)
    return page.name if page else page_script.rsplit("/", 1)[-1].removesuffix(".py")


def tls_for(host: str) -> ssl.SSLContext | bool:
    """TLS for a wss:// connection to ``host``: this machine's own server unverified, any other checked."""
    if not is_loopback(host):
        return True  # the default context: certificate and host name checked
    # Loopback only: the connection never leaves this machine, and the server's certificate names its public
    # host (or is self-signed), so a check could only fail; the link is still encrypted.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 without brackets) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: not ours to trust
        return False
