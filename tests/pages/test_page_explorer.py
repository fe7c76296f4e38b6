"""The Attention Explorer page under AppTest: widgets moved, bad input, no exception."""

import pytest
from conftest import ROOT, assert_clean, click_grid
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages/2_Attention_Explorer.py")


@pytest.fixture
def app():
    return AppTest.from_file(PAGE, default_timeout=180).run()


def test_every_control_moves_without_exception(app):
    assert_clean(app)
    app.slider(key="layer").set_value(5).run()
    app.slider(key="head").set_value(11).run()
    for key in ("hide_special", "whole_words", "log_scale"):
        app.toggle(key=key).set_value(True).run()
        assert_clean(app, key)
    app.slider(key="threshold").set_value(0.1).run()
    app.session_state["view"] = "All heads"
    app.run()
    assert_clean(app)
    app.session_state["view"] = "Token focus"
    app.run()
    app.toggle(key="focus_mean").set_value(True).run()
    app.selectbox(key="focus_token").set_value(app.selectbox(key="focus_token").options[3]).run()
    app.session_state["view"] = "Aggregates"
    app.run()
    for how in ("max over heads", "attention rollout"):
        app.radio(key="aggregate").set_value(how).run()
    assert_clean(app)


def test_only_the_open_tab_is_drawn(app):
    assert len(app.get("plotly_chart")) == 1  # one head
    app.session_state["view"] = "Aggregates"
    app.run()
    assert len(app.get("plotly_chart")) == 1  # the aggregate
    assert len(app.get("vega_lite_chart")) == 2  # the entropy and distance grids, clickable


def test_clicking_a_grid_cell_picks_that_head(app):
    app.session_state["view"] = "Aggregates"
    app.run()
    click_grid(app, "grid_tokens", 4, 7)
    assert not app.exception and not app.error
    assert (app.slider(key="layer").value, app.slider(key="head").value) == (4, 7)
    assert app.query_params["layer"] == "4" and app.query_params["head"] == "7"  # the link follows


def test_switching_to_smollm2_adapts_the_sliders(app):
    app.selectbox(key="model").set_value("smollm2").run()
    assert_clean(app)
    assert app.slider(key="layer").max == 29 and app.slider(key="head").max == 8


@pytest.mark.parametrize(
    "text, expected",
    [
        ("   ", "empty"),
        ("word " * 10_000, "only the first 512"),
    ],
)
def test_bad_text_gives_a_message(app, text, expected):
    app.text_area(key="text").set_value(text).run()
    assert not app.exception
    messages = [m.value for m in (*app.warning, *app.error)]
    assert any(expected in m for m in messages), messages


def test_script_text_is_shown_as_text(app):
    app.text_area(key="text").set_value("<script>alert(1)</script>").run()
    assert_clean(app)


def test_unknown_model_name_gives_a_message(app, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    app.selectbox(key="model").set_value("Other: a Hugging Face id or local folder...").run()
    app.text_input(key="model_custom").set_value("no-such/model").run()
    assert not app.exception
    assert "cannot be reached" in app.error[0].value


def test_binary_upload_gives_a_message():
    from txviz.app.ui import decode_upload

    with pytest.raises(ValueError, match="binary"):
        decode_upload(b"\x89PNG\r\n\x1a\n\x00\x00", "x.txt")
    with pytest.raises(ValueError, match="not UTF-8"):
        decode_upload("café".encode("latin-1"), "x.txt")
    assert decode_upload("\ufeffhello".encode()) == "hello"


def test_the_trace_memory_budget_cuts_the_text_with_a_notice_or_refuses(monkeypatch):
    from txviz.app import sessions
    from txviz.core import config

    # MiniLM: 6 layers x 12 heads, so 20 tokens' weights take 6 * 12 * 20^2 * 4 bytes
    monkeypatch.setenv("TXVIZ_TRACE_MEMORY_MB", str(6 * 12 * 20**2 * 4 / 2**20))
    monkeypatch.setattr(config, "_installed", None)
    sessions.config.clear()  # read once per server: read this one afresh
    try:
        at = AppTest.from_file(PAGE, default_timeout=180)
        at.session_state["text"] = "The budget test goes on and on. " * 8  # no other test traced it
        at.run()
        assert not at.exception and not at.error
        assert any(
            "only the first 20 tokens" in w.value and "TXVIZ_TRACE_MEMORY_MB" in w.value for w in at.warning
        )
        assert at.slider(key="layer").max == 5
        monkeypatch.setenv("TXVIZ_TRACE_MEMORY_MB", "0.0001")
        sessions.config.clear()
        at.text_area(key="text").set_value("Another budget text, too long for any budget this small.").run()
        assert not at.exception
        assert any("not even 8 tokens fit" in e.value for e in at.error), [e.value for e in at.error]
    finally:
        sessions.config.clear()
        config.install(None)


def test_characters_the_tokenizer_does_not_know_are_named(app):
    app.text_area(key="text").set_value("🙂🎉").run()
    assert_clean(app)
    notes = [i.value for i in app.info if "[UNK]" in i.value]
    assert len(notes) == 1 and "🙂" in notes[0] and "🎉" in notes[0] and "U+1F642" in notes[0]
    app.text_area(key="text").set_value("The cat sat.").run()
    assert not any("[UNK]" in i.value for i in app.info)  # every character known: nothing to explain
