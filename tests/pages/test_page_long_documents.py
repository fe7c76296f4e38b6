"""The Long Documents page under AppTest: widgets moved on SmolLM2 and MiniLM, bad input, no exception."""

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages/19_Long_Documents.py")


@pytest.fixture
def app():
    return AppTest.from_file(PAGE, default_timeout=600).run()


def test_every_control_moves_without_exception(app):
    assert not app.exception and not app.error
    assert len(app.get("plotly_chart")) == 4  # summaries, pooled map, sentences, sinks
    app.slider(key="layer").set_value(3).run()
    app.toggle(key="heads_mean").set_value(False).run()
    app.slider(key="head").set_value(8).run()
    app.radio(key="tile_stat").set_value("max").run()
    app.radio(key="level").set_value("paragraphs").run()
    app.toggle(key="log_scale").set_value(False).run()
    assert not app.exception and not app.error
    app.session_state["view"] = "Detail"
    app.run()
    assert len(app.get("plotly_chart")) == 2  # exact rows, rows over the document
    sentence = app.selectbox(key="sentence")
    sentence.set_value(sentence.options[2]).run()
    assert not app.exception and not app.error
    app.slider(key="queries").set_value((0, 100)).run()  # more rows than a drill-down takes
    assert any("64 queries" in i.value for i in app.info)
    app.slider(key="keys").set_value((10, 20)).run()
    assert not app.exception and not app.error


def test_a_short_model_keeps_its_limit_with_a_notice(app):
    app.selectbox(key="model").set_value("minilm").run()
    assert app.selectbox(key="max_tokens").options == ["512"]
    app.text_area(key="text").set_value("A sentence of words. " * 400).run()
    assert not app.exception and not app.error
    assert any("only the first 512" in w.value for w in app.warning)


@pytest.mark.parametrize("text, expected", [("   ", "empty"), ("\x00\x01", None)])
def test_bad_text_gives_a_message_or_a_view(app, text, expected):
    app.text_area(key="text").set_value(text).run()
    assert not app.exception
    if expected:
        assert any(expected in m.value for m in (*app.warning, *app.error))
