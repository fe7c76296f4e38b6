"""Shareable links: a page's settings live in the URL and a link restores them; bad links fall back."""

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.explorer import view_model as explorer

PAGE = str(ROOT / "pages/2_Attention_Explorer.py")


def test_link_restores_the_view_and_follows_changes():
    app = AppTest.from_file(PAGE, default_timeout=180)
    app.query_params.update(
        layer="3", head="5", text='"A linked sentence."', log_scale="true", aggregate='"attention rollout"'
    )
    app.run()
    assert_clean(app)
    assert (app.slider(key="layer").value, app.slider(key="head").value) == (3, 5)
    assert app.text_area(key="text").value == "A linked sentence."
    assert app.toggle(key="log_scale").value is True
    app.slider(key="layer").set_value(4).run()
    assert app.query_params["layer"] == "4"


def test_bad_link_values_fall_back_to_defaults():
    app = AppTest.from_file(PAGE, default_timeout=180)
    app.query_params.update(layer="99", head='"x"', model='"no-such"', threshold="{", aggregate='"<script>"')
    app.run()
    assert_clean(app)
    assert (app.slider(key="layer").value, app.slider(key="head").value) == explorer.DEFAULT_HEAD
    assert app.selectbox(key="model").value == "minilm"


def test_long_text_stays_out_of_the_link():
    app = AppTest.from_file(PAGE, default_timeout=180).run()
    app.text_area(key="text").set_value("long text " * 300).run()
    assert_clean(app)
    assert "text" not in app.query_params
    assert any("too long to fit in a link" in c.value for c in app.sidebar.caption)


def test_presentation_mode_runs():
    app = AppTest.from_file(PAGE, default_timeout=180).run()
    app.toggle(key="presentation").set_value(True).run()
    assert_clean(app)
