"""Serving a class: the server's config, one generation engine per model, a session's identity."""

from __future__ import annotations

import functools
import os
import threading
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from txviz.core.config import ServerConfig, load_config
from txviz.core.errors import UserError
from txviz.generation.batching import GenerationEngine
from txviz.models import LoadedModel


def _secrets() -> dict:
    """The [txviz] table of .streamlit/secrets.toml, or nothing when there is no secrets file."""
    try:
        return dict(st.secrets.get("txviz", {}))
    except Exception:  # no secrets file is the common case: Streamlit raises rather than returning {}
        return {}


@st.cache_resource(show_spinner=False)
def config() -> ServerConfig:
    """Read once per server: TXVIZ_* variables over the secrets' [txviz] table."""
    return load_config(os.environ, _secrets())


def session_id() -> str:
    """A random id for this browser session: one heavy job per session, never another's rows."""
    return st.session_state.setdefault("_txviz_session", uuid.uuid4().hex)


@functools.cache
def _job_places(max_jobs: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(max_jobs)


_inside_job = threading.local()


@contextmanager
def heavy_job() -> Iterator[None]:
    """Hold one of the server's max_jobs places for a heavy model pass; later sessions wait their turn.

    A heavy result computed inside another (one cached function calling another) runs in the outer
    one's place: taking a second would deadlock once every place is held that way.
    """
    if getattr(_inside_job, "held", False):
        yield
        return
    with _job_places(config().max_jobs):
        _inside_job.held = True
        try:
            yield
        finally:
            _inside_job.held = False


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
