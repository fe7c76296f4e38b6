"""Serving a class: the server's config, one generation engine per model, the heavy-pass queue,
a session's identity."""

from __future__ import annotations

import logging
import os
import threading
import uuid
import weakref
from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from txviz.core import config as server_config
from txviz.core.config import ServerConfig, load_config
from txviz.core.errors import UserError
from txviz.core.trace import AttentionTrace
from txviz.generation.batching import GenerationEngine
from txviz.models import LoadedModel
from txviz.serving import batches
from txviz.serving.jobs import JobCancelled, JobQueue, waiting_message

log = logging.getLogger(__name__)

T = TypeVar("T")


def _secrets() -> dict:
    """The [txviz] table of .streamlit/secrets.toml, or nothing when there is no secrets file."""
    try:
        return dict(st.secrets.get("txviz", {}))
    except Exception:  # no secrets file is the common case: Streamlit raises rather than returning {}
        # Debug only: Streamlit logs a secrets file it cannot parse itself, at startup.
        log.debug("no [txviz] secrets read; TXVIZ_* variables alone apply", exc_info=True)
        return {}


@st.cache_resource(show_spinner=False)
def config() -> ServerConfig:
    """Read once per server: TXVIZ_* variables over the secrets' [txviz] table.

    Installed in core too, so what core applies itself (the trace memory budget) follows the secrets.
    """
    found = load_config(os.environ, _secrets())
    server_config.install(found)
    return found


def session_id() -> str:
    """A random id for this browser session: one heavy job per session, never another's rows."""
    return st.session_state.setdefault("_txviz_session", uuid.uuid4().hex)


_inside_job = threading.local()  # set while this thread holds a place in the queue

# One engine per loaded model, dropped with it: the engine holds its model weakly, so when the model
# cache evicts a model nothing here keeps its weights alive.
_ENGINES: weakref.WeakKeyDictionary[LoadedModel, GenerationEngine] = weakref.WeakKeyDictionary()
_ENGINES_LOCK = threading.Lock()


def engine(loaded: LoadedModel) -> GenerationEngine:
    """The generation engine every session shares for this model."""
    with _ENGINES_LOCK:  # two sessions starting at once must not make two engines
        found = _ENGINES.get(loaded)
        if found is None:
            found = _ENGINES[loaded] = GenerationEngine(loaded, max_batch=config().max_batch)
        return found


@st.cache_resource(show_spinner=False)
def _queue(max_jobs: int) -> JobQueue:
    return JobQueue(max_jobs)


def jobs() -> JobQueue:
    """The one queue every session's heavy model passes go through (max_jobs at once)."""
    return _queue(config().max_jobs)


@st.cache_resource(show_spinner=False)
def _batcher(max_jobs: int) -> batches.Batcher:
    return batches.Batcher(_queue(max_jobs))


def heavy(job: Callable[..., T], *args, **kwargs) -> T:
    """job(*args, **kwargs) in this session's turn, telling the session its place while it waits.

    The place is redrawn at every poll: that is also where Streamlit stops a session that left or
    reran, which takes it out of the queue.
    """
    if getattr(_inside_job, "held", False):
        # one heavy result computed inside another runs in the outer one's place: asking for a
        # second place would deadlock once every place is held that way
        return job(*args, **kwargs)

    def held() -> T:
        _inside_job.held = True
        try:
            return job(*args, **kwargs)
        finally:
            _inside_job.held = False

    return _in_turn(lambda tell: jobs().run(held, owner=session_id(), on_wait=tell))


def trace(loaded: LoadedModel, text: str, record: tuple[str, ...]) -> AttentionTrace:
    """The attention trace of ``text``, in this session's turn, in one pass with other sessions'
    traces of texts of similar length on the same model."""
    if getattr(_inside_job, "held", False):
        from txviz.core.tracing import trace_text

        return trace_text(loaded, text, record=record)
    cfg = config()
    return _in_turn(
        lambda tell: batches.trace(
            _batcher(cfg.max_jobs), loaded, text, record, session_id(), tell, max_rows=cfg.max_batch
        )
    )


def _in_turn(enter: Callable[[Callable[[int], None]], T]) -> T:
    """enter(tell): a place in the queue, the session told its place while it waits."""
    shown = []

    def tell(ahead: int) -> None:
        if not shown:
            shown.append(st.empty())
        shown[0].info(f"Busy server: {waiting_message(ahead)}", icon="⏳")

    try:
        return enter(tell)
    except JobCancelled:
        st.stop()  # this session asked for something newer, which runs instead
    finally:
        if shown:
            shown[0].empty()


def offered_models(names: list[str]) -> list[str]:
    """In public mode, the registry's models and the allow-list; otherwise every name."""
    cfg = config()
    if not cfg.public:
        return names
    return names + [m for m in cfg.allowed_models if m not in names]


def check_allowed(name: str, registry: list[str]) -> None:
    """Refuse, in public mode, a model that is neither shipped, trained here nor allow-listed."""
    cfg = config()
    if cfg.public and name not in registry and name not in cfg.allowed_models:
        raise UserError(
            f"This is a public txviz server: it runs only its own models ({', '.join(registry)})"
            + (f" and {', '.join(cfg.allowed_models)}" if cfg.allowed_models else "")
            + ". Local folders and Hugging Face ids typed here are not loaded."
        )


def max_text_chars(cap: int | None = None) -> int:
    """Characters a text box takes: the server's max_text_chars, or a page's tighter cap under it."""
    limit = config().max_text_chars
    return limit if cap is None else min(cap, limit)
