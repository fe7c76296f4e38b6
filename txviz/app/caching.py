"""Caches shared by every session: the one way the app caches anything (ui re-exports them)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from txviz.app import serving
from txviz.core.trace import lock_arrays
from txviz.models import LoadedModel

T = TypeVar("T")
_CACHED: dict[str, Any] = {}  # every ui.cached store by its function's name, for clear_cached


def cached(
    max_entries: int = 8,
    spinner: str | bool = "Running the model...",
    progress: str | None = None,
    queued: bool = True,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator for a heavy result of ``func(loaded, *args)`` shared by every session.

    The one way a page caches anything that involves a model. st.cache_resource, not cache_data:
    no pickling and copying of large arrays at every hit. The result's numpy arrays are locked
    read-only because every session gets the same object. The key is the model's name, device and
    precision plus the other arguments (hashed as cache_data would); the model itself is not held, so an
    evicted model is freed. With ``progress`` (a label), a progress bar replaces the spinner and
    ``func`` gets its update function as ``progress=``. ``queued=False``: ``func`` takes its place
    in the heavy-pass queue itself (a trace batched with other sessions').
    """

    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        def shared(_loaded: LoadedModel, name: str, device: str, dtype: str, *args: Any) -> T:
            def compute() -> T:
                if not progress:
                    return func(_loaded, *args)
                bar = st.progress(0.0, progress)  # made inside, so a cache hit replays it
                try:
                    return func(_loaded, *args, progress=bar.progress)
                finally:
                    bar.empty()

            # in turn with other sessions (max_jobs)
            return lock_arrays(serving.heavy(compute) if queued else compute())

        store = _named_store(shared, func, max_entries, False if progress else spinner)

        @functools.wraps(func)
        def call(loaded: LoadedModel, *args: Any) -> T:
            return store(loaded, loaded.name, str(loaded.device), loaded.dtype, *args)

        call.clear = store.clear  # type: ignore[attr-defined]
        return call

    return decorate


def shared_resource(
    max_entries: int | None = None, spinner: str | bool = False
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator for a result that involves no LoadedModel, one object for every session.

    For a page's own small trained files and for computations without a model: keyed by every
    argument, arrays locked read-only like ``cached``. Whatever the result depends on must be an
    argument (a device too, if it has one).
    """

    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        def shared(*args: Any, **kwargs: Any) -> T:
            return lock_arrays(func(*args, **kwargs))

        return _named_store(shared, func, max_entries, spinner)

    return decorate


def cached_data(
    max_entries: int = 8, spinner: str | bool = False
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator for a small JSON-like result that involves no model: each session gets a copy.

    st.cache_data pickles the result at every hit, so a session may change its copy freely; keep
    it for small results (a BPE trace of strings and counts), and every input an argument.
    """

    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        def private(*args: Any, **kwargs: Any) -> T:
            return func(*args, **kwargs)

        return _named_store(private, func, max_entries, spinner, st.cache_data)

    return decorate


def _named_store(inner: Callable, func: Callable, max_entries, spinner, kind=None):
    """``inner`` cached under ``func``'s name (with its docstring), and listed for clear_cached."""
    # Nested functions with one source share one cache in Streamlit (streamlit#11157): name it, with
    # its file too, since every page script runs as __main__ and two pages may name a function alike.
    page = os.path.splitext(os.path.basename(func.__code__.co_filename))[0]
    inner.__module__, inner.__qualname__ = func.__module__, f"{func.__qualname__}.cached.{page}"
    inner.__name__, inner.__doc__ = func.__name__, func.__doc__
    store = (kind or st.cache_resource)(max_entries=max_entries, show_spinner=spinner)(inner)
    _CACHED[f"{func.__module__}.{inner.__qualname__}"] = store
    return store


def clear_cached() -> None:
    """Empty every store of ui.cached, shared_resource and cached_data (the loaded models stay)."""
    for store in _CACHED.values():
        store.clear()
