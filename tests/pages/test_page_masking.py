"""The masking patterns page: every tab's widgets move without errors, bad input gets a message."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from txviz.bench import masks as bench
from txviz.masks import patterns as masks

PAGE = "pages/5_Masking_Patterns.py"


def run_page(view: str = "Gallery", **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=300)
    at.session_state["view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def ok(at: AppTest) -> bool:
    return not at.exception and not at.error


def figure_titles(at: AppTest) -> list[str]:
    return [
        json.loads(e.proto.spec)["layout"].get("title", {}).get("text", "") for e in at.get("plotly_chart")
    ]


def test_gallery_moves_through_every_pattern_and_parameter():
    at = run_page()
    assert ok(at)
    for key, pattern in masks.PATTERNS.items():
        at.selectbox(key="gallery_pattern").set_value(key).run()
        assert ok(at), key
        if pattern.params:
            for param in pattern.params:
                at.number_input(key=f"gallery_{key}_{param.name}").set_value(param.default + 3)
            at.run()
            assert ok(at), key
    at.slider(key="gallery_n").set_value(40).run()
    at.slider(key="gallery_n").set_value(2).run()
    assert ok(at)


def test_a_window_wider_than_the_text_and_an_empty_row_are_handled():
    at = run_page(gallery_pattern="local", gallery_n=5)
    at.number_input(key="gallery_local_window").set_value(500).run()
    assert ok(at) and not at.warning
    at.selectbox(key="gallery_pattern").set_value("padding").run()
    at.number_input(key="gallery_padding_n_pad").set_value(5).run()
    assert ok(at)
    assert any("attends to itself" in w.value for w in at.warning)


def test_a_zero_rate_is_refused_by_the_widget():
    # The number input keeps its minimum of 1; the builders' own messages are tested in test_masks.
    at = run_page(gallery_pattern="dilated")
    at.number_input(key="gallery_dilated_rate").set_value(0).run()
    assert ok(at)
    assert at.number_input(key="gallery_dilated_rate").value >= 1


def test_swin_tab():
    at = run_page("Images (Swin)")
    assert ok(at)
    at.slider(key="swin_h").set_value(5).run()
    at.slider(key="swin_w").set_value(12).run()
    at.slider(key="swin_window").set_value(3).run()
    assert ok(at)


def test_real_cost_tab_shows_saved_numbers_and_measures_on_a_button(monkeypatch):
    # The button's real run (four lengths, each compiled) is `python -m txviz bench masks`'s job; here the
    # page measures one tile's length, compile included, through the same code.
    monkeypatch.setattr(bench, "PAGE_SIZES", (bench.sa.BLOCK_SIZE,))
    at = run_page("Real cost")
    assert ok(at)
    for key in ("local", "bigbird", "strided"):
        at.selectbox(key="cost_pattern").set_value(key).run()
        assert ok(at)
        assert at.dataframe[0].value["n"].tolist()[-1] == "8,192"
    at.selectbox(key="cost_pattern").set_value("block").run()
    assert at.button(key="measure").label == "Measure on this machine (128 tokens)"
    at.button(key="measure").click().run()
    assert ok(at)
    assert at.dataframe[0].value["n"].tolist() == ["128"]
    assert any("measured just now" in title for title in figure_titles(at))


@pytest.mark.parametrize("model", ["minilm", "smollm2"])
def test_real_model_tab_moves_its_widgets(model):
    at = run_page("On a real model", model=model)
    assert ok(at)
    at.selectbox(key="model_pattern").set_value("bigbird").run()
    at.number_input(key="model_bigbird_window").set_value(1).run()
    at.slider(key="layer").set_value(3).run()
    at.slider(key="head").set_value(2).run()
    assert ok(at)
    labels = [m.label for m in at.metric]
    if model == "smollm2":
        assert "Next token" in labels and len(at.dataframe[0].value) == 5
    else:
        assert labels == ["Sentence embedding: cosine to the unmasked one"]
        assert 0 < float(at.metric[0].value) < 1


def test_real_model_tab_empty_text_and_all_padding():
    at = run_page("On a real model", model="minilm", text="   ")
    assert not at.exception
    assert any("empty" in w.value for w in at.warning)
    at = run_page("On a real model", model="minilm", model_pattern="padding")
    at.number_input(key="model_padding_n_pad").set_value(1000).run()
    assert ok(at)
    assert any("attends to itself" in w.value for w in at.warning)
