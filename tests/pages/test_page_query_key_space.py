"""The Query Key Space page under AppTest: widgets moved, both tabs, bad input, no exception."""

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages/17_Query_Key_Space.py")


@pytest.fixture
def app():
    return AppTest.from_file(PAGE, default_timeout=300).run()


def test_every_control_moves_without_exception(app):
    assert_clean(app)
    assert len(app.get("plotly_chart")) == 1
    app.slider(key="qk_layer").set_value(5).run()
    app.slider(key="qk_head").set_value(11).run()
    for color in ("position", "token"):
        app.radio(key="qk_color").set_value(color).run()
        assert_clean(app, color)
    app.toggle(key="qk_translate").set_value(False).run()
    app.toggle(key="qk_skip_first").set_value(True).run()
    assert_clean(app)
    assert app.query_params["qk_layer"] == "5" and app.query_params["qk_color"] == '"token"'
    app.session_state["qk_view"] = "Every head of a layer"
    app.run()
    assert_clean(app)
    assert len(app.get("plotly_chart")) == 1


def test_tsne_and_your_text(app):
    app.radio(key="qk_source").set_value("Your text").run()
    app.text_area(key="qk_text").set_value("One.\n\nTwo words here.").run()
    app.radio(key="qk_method").set_value("t-SNE").run()
    assert_clean(app)


def test_smollm2_and_a_one_token_text(app):
    app.selectbox(key="model").set_value("smollm2").run()
    assert_clean(app)
    assert app.slider(key="qk_layer").max == 29
    app.radio(key="qk_source").set_value("Your text").run()
    app.text_area(key="qk_text").set_value("Hi").run()
    assert_clean(app)


def test_empty_and_huge_text_give_a_message(app):
    app.radio(key="qk_source").set_value("Your text").run()
    app.text_area(key="qk_text").set_value("   ").run()
    assert not app.exception and "empty" in app.error[0].value
    app.text_area(key="qk_text").set_value("word " * 19_000).run()
    assert_clean(app)
    assert any("passages" in w.value for w in app.warning)
