"""The Head Detectors page under AppTest: widgets moved, each tab opened, bad input, no exception."""

import json
from urllib.parse import parse_qs

import pytest
from conftest import ROOT, assert_clean, click_grid
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages/16_Head_Detectors.py")


@pytest.fixture
def app():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["rep_n"] = 1  # one short repeated sequence keeps each run quick
    at.session_state["rep_len"] = 6
    return at.run()


def test_detector_widgets_move_without_exception(app):
    assert_clean(app)
    assert app.selectbox(key="detector").value == "previous_token"
    for name in ("previous_token", "first_token", "broad", "offset_plus2"):
        app.selectbox(key="detector").set_value(name).run()
        assert_clean(app, name)
    app.number_input(key="pick_layer").set_value(5).run()
    app.number_input(key="pick_head").set_value(11).run()
    assert_clean(app)
    assert app.query_params["pick_layer"] == "5" and app.query_params["detector"] == '"offset_plus2"'
    assert any("score" in m.label for m in app.metric)
    assert len(app.dataframe) == 1 and len(app.dataframe[0].value) == 6 * 12


def test_clicking_a_grid_cell_picks_that_head(app):
    click_grid(app, "detector_grid", 3, 9)
    assert not app.exception and not app.error
    assert (app.number_input(key="pick_layer").value, app.number_input(key="pick_head").value) == (3, 9)
    assert "layer 3, head 9" in app.get("page_link")[0].proto.label  # the Explorer link follows


def test_the_link_opens_the_explorer_on_the_head_and_its_text(app):
    app.selectbox(key="detector").set_value("induction").run()
    app.number_input(key="pick_layer").set_value(2).run()
    app.number_input(key="pick_head").set_value(4).run()
    links = app.get("page_link")
    (link,) = [p for p in links if p.proto.page.endswith("Attention_Explorer")]
    (why,) = [p for p in links if p.proto.page.endswith("Why_Attend")]
    params = {k: v[0] for k, v in parse_qs(link.proto.query_string).items()}
    text = json.loads(params["text"])
    assert text.split()[:6] == text.split()[6:]  # induction is scored on a repeated random sequence
    explorer = AppTest.from_file(str(ROOT / "pages/2_Attention_Explorer.py"), default_timeout=300)
    explorer.query_params.update(params)
    explorer.run()
    assert_clean(explorer)
    assert (explorer.slider(key="layer").value, explorer.slider(key="head").value) == (2, 4)
    assert explorer.text_area(key="text").value == text
    why_page = AppTest.from_file(str(ROOT / "pages/23_Why_Attend.py"), default_timeout=300)
    why_page.query_params.update({k: v[0] for k, v in parse_qs(why.proto.query_string).items()})
    why_page.run()
    assert_clean(why_page)
    assert (why_page.slider(key="why_layer").value, why_page.slider(key="why_head").value) == (2, 4)


def test_your_text_and_a_one_token_text(app):
    app.radio(key="corpus_source").set_value("Your text").run()
    app.text_area(key="corpus_text").set_value("Hello").run()  # [CLS] hello [SEP]: 3 tokens on MiniLM
    assert_clean(app)
    app.selectbox(key="model").set_value("smollm2").run()
    assert_clean(app)
    app.text_area(key="corpus_text").set_value("Hello").run()
    assert_clean(app)
    assert any("single token" in w.value for w in app.warning), [w.value for w in app.warning]


def test_smollm2_picks_stay_in_range(app):
    app.number_input(key="pick_layer").set_value(5).run()
    app.selectbox(key="model").set_value("smollm2").run()
    assert_clean(app)
    assert app.number_input(key="pick_layer").max == 29


def test_link_restores_the_picked_head():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["rep_n"], at.session_state["rep_len"] = 1, 6
    at.query_params.update(detector=json.dumps("induction"), pick_layer="3", pick_head="7")
    at.run()
    assert_clean(at)
    assert at.selectbox(key="detector").value == "induction"
    assert (at.number_input(key="pick_layer").value, at.number_input(key="pick_head").value) == (3, 7)


def test_attention_against_attribution_tab(app):
    app.session_state["heads_view"] = "Attention vs attribution"
    app.run()
    assert_clean(app)
    assert len(app.get("plotly_chart")) == 2  # bars and the correlation matrix
    app.toggle(key="attr_skip").set_value(False).run()
    app.text_input(key="attr_other").set_value("").run()
    assert not app.exception and any("empty" in w.value for w in app.warning)
    app.text_input(key="attr_other").set_value("A cat.").run()
    app.text_input(key="attr_text").set_value("Hi").run()  # [CLS] hi [SEP]: the fewest an encoder gets
    assert_clean(app)


def test_two_models_tab(app):
    app.session_state["heads_view"] = "Two models"
    app.run()
    assert_clean(app)
    assert app.selectbox(key="model_b").value == "smollm2"  # the other shipped model
    app.selectbox(key="cmp_detector").set_value("broad").run()
    app.slider(key="cmp_rel_depth").set_value(1.0).run()
    app.number_input(key="cmp_head_b").set_value(8).run()
    assert_clean(app)
    labels = [n.label for n in app.number_input]
    assert "minilm: head (layer 5)" in labels and "smollm2: head (layer 29)" in labels


def test_the_shipped_texts_scores_are_stored_and_read_on_the_next_open(monkeypatch, tmp_path):
    """Scores of the shipped texts do not depend on the visitor: scored once, stored, read afterwards."""
    from txviz.app import ui
    from txviz.heads import runs

    monkeypatch.setenv("TXVIZ_STORE_DIR", str(tmp_path))
    ui.clear_cached()

    def opened() -> AppTest:
        at = AppTest.from_file(PAGE, default_timeout=300)
        at.session_state["rep_n"] = 1
        at.session_state["rep_len"] = 6
        at.run()
        assert_clean(at)
        return at

    first = opened()
    assert list((tmp_path / "head-scores").iterdir()), "the first open stores the shipped texts' scores"
    ui.clear_cached()  # a fresh server: only the disk remembers

    def no_scoring(*args, **kwargs):
        raise AssertionError("the shipped texts were scored again")

    monkeypatch.setattr(runs, "score_heads", no_scoring)
    again = opened()
    assert [m.value for m in again.metric] == [m.value for m in first.metric]
    assert again.dataframe[0].value.equals(first.dataframe[0].value)
    # a visitor's own text is scored, never stored
    again.radio(key="corpus_source").set_value("Your text").run()
    assert again.exception  # it reached the scoring, which this test forbids
    assert len(list((tmp_path / "head-scores").iterdir())) == 1
