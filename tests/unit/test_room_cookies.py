"""The script that asks a browser to keep a room's key or seat: the cookie's attributes, and a value that
cannot break out of the script."""

from __future__ import annotations

import json
import re

import pytest

from txviz.app.lecture import room_cookies
from txviz.lecture.rooms.base import IDLE_TTL_S


def assigned(script: str) -> str:
    """The cookie text the script assigns (the JSON string between '=' and '+')."""
    match = re.fullmatch(r"<script>document\.cookie = (\".*\") \+ \(location.*\);</script>", script)
    assert match, script
    return json.loads(match.group(1))


def test_a_kept_cookie_is_the_whole_sites_strict_and_lives_as_long_as_an_idle_room():
    text = assigned(room_cookies.script(room_cookies.seat_name("K7P3QX"), "abc_DEF-123"))
    assert text == f"txviz_seat_K7P3QX=abc_DEF-123; Path=/; Max-Age={IDLE_TTL_S}; SameSite=Strict"


def test_a_forgotten_cookie_expires_at_once():
    text = assigned(room_cookies.script(room_cookies.key_name("K7P3QX"), "", max_age=0))
    assert text.startswith("txviz_key_K7P3QX=;") and "Max-Age=0;" in text


def test_a_value_that_is_not_a_token_is_refused_so_nothing_can_close_the_script():
    for value in ('"</script><script>alert(1)</script>', "a;b", "a b", "é"):
        with pytest.raises(ValueError):
            room_cookies.script("txviz_seat_X", value)
    assert "<" not in room_cookies.script("txviz_seat_X", "ok")[len("<script>") : -len("</script>")]
