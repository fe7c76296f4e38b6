"""A browser's proof of its part in a room: the lecturer's key and a student's seat live in cookies of
this site, never in an address, a link or the projector's screen.

Streamlit has no public way to set a cookie from the server, so the page that holds a credential asks
its own browser to keep it (a script in an ``st.html`` element, drawn on every full run of that session
only); the server reads it back from the websocket's request (``st.context.cookies``) when the browser
next loads a page: a reload, or a second tab of the same browser. A link copied to another browser
carries no cookie, so it joins as a new student and never drives.

The cookies are ``SameSite=Strict`` and ``Secure`` behind HTTPS; they are readable by the page's own
scripts (not HTTP-only), which is safe while the app never renders a user's text as HTML.
"""

from __future__ import annotations

import json
import re

import streamlit as st

from txviz.lecture.rooms.base import IDLE_TTL_S

KEY_PREFIX = "txviz_key_"  # + room code: the lecturer's key in the presenter's browser
SEAT_PREFIX = "txviz_seat_"  # + room code: a student's seat in their browser
MAX_AGE_S = IDLE_TTL_S  # a room idle this long is gone, and so is the point of its cookie
SAFE = re.compile(r"[A-Za-z0-9_-]+")  # what secrets.token_urlsafe and room codes are made of


def key_name(code: str) -> str:
    return f"{KEY_PREFIX}{code}"


def seat_name(code: str) -> str:
    return f"{SEAT_PREFIX}{code}"


def read(name: str) -> str:
    """The cookie this browser sent when it opened the session ('' when none)."""
    return str((st.context.cookies or {}).get(name) or "")


def cookie_text(name: str, value: str, max_age: int = MAX_AGE_S) -> str:
    """The ``document.cookie`` assignment for one cookie of the whole site."""
    return f"{name}={value}; Path=/; Max-Age={int(max_age)}; SameSite=Strict"


def script(name: str, value: str, max_age: int = MAX_AGE_S) -> str:
    """A script that keeps the cookie in this browser. Names and values are ours (codes and tokens); any
    other is refused, and the JSON string escapes <, > and & so nothing can close the script."""
    if not (SAFE.fullmatch(name) and SAFE.fullmatch(value or "-")):
        raise ValueError("a room cookie holds letters, digits, '-' and '_' only")
    text = json.dumps(cookie_text(name, value, max_age))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"<script>document.cookie = {text} + (location.protocol === 'https:' ? '; Secure' : '');</script>"


def keep(name: str, value: str) -> None:
    """Ask this session's browser to keep the cookie (drawn on each full run: a switch may drop one)."""
    if read(name) != value:
        st.sidebar.html(script(name, value), unsafe_allow_javascript=True)


def forget(name: str) -> None:
    """Ask this session's browser to drop the cookie (whether or not it had it when the session opened)."""
    st.sidebar.html(script(name, "", max_age=0), unsafe_allow_javascript=True)
