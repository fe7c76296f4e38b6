"""The browser's Back from a lesson (or any page opened with settings) keeps that page's query in the
previous page's address; the previous page drops what is not its own, so its Copy link does too."""

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.app import links

PAGE = str(ROOT / "pages/22_Course_Map.py")
LESSON = {  # assets/lessons/2_a_head_that_finds_the_subject.json, as its Attention Explorer address has it
    "model": '"minilm"',
    "text": '"The keys to the cabinet are on the table."',
    "layer": "3",
    "head": "1",
    "hide_special": "true",
}


def test_another_pages_settings_leave_this_pages_address():
    app = AppTest.from_file(PAGE, default_timeout=120)
    app.query_params.update(LESSON | {"map_part": '"positional"', "tour": "intro"})
    app.run()
    assert_clean(app)
    kept = dict(app.query_params)
    assert not set(LESSON) & set(kept), kept
    assert kept.get("map_part") == '"positional"'  # the page's own setting stays
    assert kept.get("tour") == "intro"  # and what is no page's setting (a tour, a room) is left alone


def test_foreign_keys_are_other_pages_settings_only():
    shared = ["model", "text", "layer_*@*"]
    keys = ["model", "text", "layer_2@minilm", "layer", "hide_special", "present", "room", "tour", "lecture"]
    assert links.foreign_keys(keys, shared) == ["layer", "hide_special", "lecture"]
