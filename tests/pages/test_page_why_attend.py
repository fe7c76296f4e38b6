"""The Why Attend page under AppTest: widgets moved, every mode, the check, composition, bad input."""

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages/23_Why_Attend.py")


@pytest.fixture
def app():
    return AppTest.from_file(PAGE, default_timeout=300).run()


def test_every_control_moves_without_exception(app):
    assert_clean(app)
    assert len(app.get("vega_lite_chart")) == 2  # the head's attention (clickable) and the parts matrix
    app.slider(key="why_layer").set_value(3).run()
    app.slider(key="why_head").set_value(2).run()
    app.selectbox(key="why_query").set_value(5).run()
    app.selectbox(key="why_key").set_value(2).run()
    for mode in ("this key rather than another", "this key against the row", "this key"):
        app.radio(key="why_mode").set_value(mode).run()
        assert_clean(app, mode)
    app.toggle(key="why_expand").set_value(False).run()
    assert_clean(app)
    app.radio(key="why_side").set_value("key").run()
    app.button(key="why_check").click().run()
    assert_clean(app)
    assert any("predicted" in m.value for m in app.markdown)
    app.toggle(key="why_comp").set_value(True).run()
    app.radio(key="why_comp_kind").set_value("K").run()
    assert_clean(app)
    assert app.query_params["why_layer"] == "3"
    app.session_state["why_query"], app.session_state["why_key"] = 4, 1  # what a click on a cell sets
    app.run()
    assert_clean(app)
    assert (app.selectbox(key="why_query").value, app.selectbox(key="why_key").value) == (4, 1)


def test_smollm2_refuses_a_key_after_the_query(app):
    app.selectbox(key="model").set_value("smollm2").run()
    assert_clean(app)
    app.selectbox(key="why_query").set_value(2).run()
    app.selectbox(key="why_key").set_value(6).run()
    assert not app.exception and "causal mask" in app.error[0].value
    app.selectbox(key="why_key").set_value(1).run()
    assert_clean(app)


def test_bfloat16_in_the_sidebar_decomposes_in_float32():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["precision"] = "bfloat16"
    at.run()
    assert_clean(at)
    assert any("loads the model in float32" in m.value for m in at.info)
    assert len(at.get("vega_lite_chart")) == 2  # the decomposition is drawn, not refused


def test_it_opens_on_an_edge_between_two_words(app):
    """Not [SEP] -> [CLS]: the default sentence opens on its pronoun and a word it attends to."""
    query, key = (app.selectbox(key=k).value for k in ("why_query", "why_key"))
    tokens = app.selectbox(key="why_query").options
    chosen = (tokens[query].split(": ", 1)[1], tokens[key].split(": ", 1)[1])
    assert chosen[0] == "it", chosen
    assert chosen[1] not in ("[CLS]", "[SEP]", ".", "it"), chosen
