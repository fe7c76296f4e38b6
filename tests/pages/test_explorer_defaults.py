"""The Attention Explorer opens on a head worth seeing, and Token focus on the sentence's pronoun."""

from __future__ import annotations

import json

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages/2_Attention_Explorer.py")


def open_page(**params) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.query_params.update({k: json.dumps(v) for k, v in params.items()})
    return at.run()


def test_opens_on_layer_3_head_1_with_a_hint_and_links_keep_it():
    at = open_page()
    assert_clean(at)
    assert (at.slider(key="layer").value, at.slider(key="head").value) == (3, 1)
    assert any("What to notice" in c.value and "Token focus" in c.value for c in at.caption)
    at.run()  # the link written on the first run names the default head
    assert (at.query_params["layer"], at.query_params["head"]) == ("3", "1")
    linked = open_page(layer=5, head=7)
    assert (linked.slider(key="layer").value, linked.slider(key="head").value) == (5, 7)


def test_token_focus_starts_on_the_pronoun_else_the_first_token():
    at = open_page()
    at.session_state["view"] = "Token focus"
    at.run()
    assert_clean(at)
    assert at.selectbox(key="focus_token").value == "10: it"
    plain = AppTest.from_file(PAGE, default_timeout=180)
    plain.session_state["view"] = "Token focus"
    plain.session_state["text"] = "Cats chase mice at night."
    plain.run()
    assert_clean(plain)
    assert plain.selectbox(key="focus_token").value == "1: cats"
