"""Links to a view: a page's settings kept in the URL as JSON values, read back by its widgets.

A page's settings are named in its record of the page map (txviz/page_map.py); each run copies those session-state values
into ``st.query_params`` and offers the address in a sidebar "Copy link" control. Widgets take their
first value from the link through ``link_value`` (``link_index`` for a list of options, ``link_tab``
for keyed tabs), which fall back to the default on a missing, malformed or out-of-range value.
Lessons (assets/lessons/*.json) carry settings in the same JSON encoding.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Container, Sequence
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlencode

import streamlit as st

MAX_LINK_CHARS = 1_500  # longer values stay out of the URL (browsers and chat apps cut long links)
_COPY_BOX = "_copy_link_box"
_TAB_DEFAULTS = "_link_tab_defaults"
# A lecture room's membership (and an old link's secrets): never in a copied view link.
PRIVATE = ("room", "screen", "key", "seat", "resume")


def shared_keys(patterns: Sequence[str]) -> list[str]:
    """The session-state keys a page's setting keys name: plain keys, and fnmatch patterns ("layer_*@*") for
    widgets keyed by what is chosen on the page (a model name), which setup_page cannot know yet."""
    keys = []
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            keys += sorted(k for k in st.session_state if isinstance(k, str) and fnmatchcase(k, pattern))
        else:
            keys.append(pattern)
    return keys


def _write(key: str) -> bool:
    """Copy one session-state value into the URL; False when it is too long for a link."""
    try:
        value = json.dumps(st.session_state[key], allow_nan=False)
    except (TypeError, ValueError):  # not a setting (an uploaded file, NaN): it stays out of the link
        return True
    if len(value) > MAX_LINK_CHARS:
        st.query_params.pop(key, None)
        return False
    if st.query_params.get(key) != value:
        st.query_params[key] = value
    return True


def foreign_keys(keys: Sequence[str], patterns: Sequence[str]) -> list[str]:
    """Of an address's ``keys``, the settings of another page that this page (its ``patterns``) does not
    keep: the browser's Back from a lesson or a linked page leaves that page's query in this address."""
    from txviz import page_map  # the map imports no app module; here to keep links.py light to import

    def ours(key: str) -> bool:
        return any(fnmatchcase(key, pattern) for pattern in patterns) or any(
            setting.matches(key) for setting in page_map.COMMON
        )

    return [key for key in keys if not ours(key) and any(page.setting(key) for page in page_map.PAGES)]


def write_link(patterns: Sequence[str]) -> None:
    """Keep the page's settings in the URL so the address bar is a link back to this view; another page's
    settings that the browser carried into this address leave it."""
    for key in foreign_keys(list(st.query_params), patterns):
        st.query_params.pop(key, None)
    # A widget not drawn this run is not in the session: its last value stays in the URL.
    too_long = [key for key in shared_keys(patterns) if key in st.session_state and not _write(key)]
    if too_long:
        st.sidebar.caption(
            f"The {', '.join(too_long)} is too long to fit in a link; the link opens the rest of this view. "
            "Lesson presets can carry long texts."
        )


def link_set(key: str, value: Any) -> None:
    """A setting the page derives during its run (not a widget's): kept in the session and the link now,
    since the link was written before the page's widgets ran."""
    st.session_state[key] = value
    _write(key)
    box = st.session_state.get(_COPY_BOX)
    if box is not None:
        _show_url(box)


_NOTHING = object()


def _read(key: str) -> Any:
    """The link's JSON value of ``key``, or _NOTHING when this session has it or the link has none."""
    if key in st.session_state or key not in st.query_params:
        return _NOTHING
    try:
        value = json.loads(st.query_params[key])
    except ValueError:
        return _NOTHING
    if isinstance(value, float) and not math.isfinite(value):  # json reads NaN and Infinity
        return _NOTHING
    return value


def link_value(key: str, default: Any, valid: Container | Callable[[Any], bool] | None = None) -> Any:
    """The value a shared link gives this setting, when it is valid; otherwise the default."""
    value = _read(key)
    widened = isinstance(default, float) and type(value) is int  # a whole number typed as 2, not 2.0
    if value is _NOTHING or (default is not None and type(value) is not type(default) and not widened):
        return default
    try:
        ok = valid is None or (valid(value) if callable(valid) else value in valid)
    except TypeError:  # a link's list or dict against options it cannot be compared with
        return default
    return value if ok else default


def link_index(key: str, options: Sequence[Any], default: int = 0) -> int:
    """The ``index=`` of a selectbox or radio: the link's option when it is one of ``options``."""
    value = _read(key)
    for index, option in enumerate(options):  # of the same type: the link's true is not option 1
        if type(option) is type(value) and option == value:
            return index
    return default


def link_tab(key: str, labels: Sequence[str], first: str | None = None) -> str:
    """The ``default=`` of keyed tabs: the link's tab (else ``first``, else the first label), kept the same
    while the tabs stay on the page.

    Streamlit counts a tab set's ``default`` in its identity, so a default that changed at the next
    run (the link read once, then the first tab) would reset the reader's tab.
    """
    defaults = st.session_state.setdefault(_TAB_DEFAULTS, {})  # one dict: no stray label-valued keys
    remembered = (key, tuple(labels))
    if key not in st.session_state or remembered not in defaults:
        defaults[remembered] = link_value(key, first if first in labels else labels[0], list(labels))
    return defaults[remembered]


def view_url() -> str:
    """The address of this view: the page's URL in the reader's browser with the settings' query."""
    base = st.context.url or ""  # None without a browser behind the session (a script run in tests)
    query = urlencode({k: v for k, v in st.query_params.to_dict().items() if k not in PRIVATE})
    return f"{base}?{query}" if query else base


def _show_url(box) -> None:
    box.code(view_url(), language=None, wrap_lines=True)  # plain text, never HTML


def copy_link() -> None:
    """A sidebar control that shows this view's full address in a code box, copied with one click."""
    with st.sidebar.popover("Copy link", icon=":material/link:", width="stretch"):
        st.caption("The link opens this page with its settings, tab and selection.")
        box = st.empty()
    st.session_state[_COPY_BOX] = box  # link_set refreshes it later in the run
    _show_url(box)
