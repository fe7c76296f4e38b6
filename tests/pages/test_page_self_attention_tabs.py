"""The self-attention page's textbook tabs: shuffle, additive attention, linear attention."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "1_Self_Attention.py")


def run_page(view: str, **state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def metric_values(at: AppTest) -> list[float]:
    return [float(m.value) for m in at.metric]


def test_shuffle_tab_moves_its_widgets():
    at = run_page("Shuffle the tokens")
    assert_clean(at)
    toy, model = metric_values(at)[:2]
    assert toy < 1e-6 and model < 1e-4  # default: no positions, every id 0
    at.toggle(key="shuffle_positions").set_value(True).run()
    at.number_input(key="shuffle_seed").set_value(3).run()
    at.radio(key="shuffle_mode").set_value("slots").run()
    assert_clean(at)
    toy, model = metric_values(at)[:2]
    assert toy > 1e-3 and model > 0.1
    at.radio(key="shuffle_mode").set_value("carried").run()
    assert metric_values(at)[1] < 1e-4


def test_shuffle_tab_empty_text():
    at = run_page("Shuffle the tokens", shuffle_text="   ")
    assert not at.exception
    assert at.error or at.warning


def test_additive_tab_moves_its_widgets():
    at = run_page("Additive (Bahdanau)")
    assert_clean(at)
    at.slider(key="additive_h").set_value(3).run()
    at.selectbox(key="additive_query").set_value(2).run()
    at.slider(key="n_tokens").set_value(5).run()
    at.slider(key="d_model").set_value(3).run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert len(table) == 5 and abs(table["additive weight"].sum() - 1) < 1e-9


def test_linear_tab_moves_its_widgets():
    at = run_page("Linear attention")
    assert_clean(at)
    values = metric_values(at)
    assert values[2] < 1e-10 and values[3] < 1e-10  # O(n) == n x n form, recurrent == parallel
    at.slider(key="linear_layer").set_value(5).run()
    at.slider(key="linear_head").set_value(0).run()
    at.button(key="linear_measure").click().run()
    assert_clean(at)
    assert len(at.dataframe[0].value) == 4


def test_linear_tab_empty_text():
    at = run_page("Linear attention", linear_text=" ")
    assert not at.exception
    assert at.error or at.warning


def chart_labels(at: AppTest) -> list[str]:
    """Every tick label of the page's plotly charts, as plotly receives them."""
    labels = []
    for chart in at.get("plotly_chart"):
        layout = json.loads(chart.proto.spec)["layout"]
        labels += [t for axis in layout.values() if isinstance(axis, dict) for t in axis.get("ticktext", [])]
    return labels


def test_linear_tab_escapes_tokens_once():
    """Plotly reads HTML entities: '&' must reach it as '&amp;', not '&amp;amp;' (shown as '&amp;')."""
    at = run_page("Linear attention", linear_text="Tom & Jerry <b>x</b>")
    assert not at.exception and not at.error
    labels = chart_labels(at)
    assert "&amp;" in labels and "&lt;" in labels and "&gt;" in labels
    assert not [label for label in labels if "&amp;amp;" in label or "&amp;lt;" in label]


def test_linear_tab_shows_linformer_performer_and_the_families():
    at = run_page("Linear attention")
    assert not at.exception and not at.error
    values = metric_values(at)
    assert len(values) == 11 and all(v >= 0 for v in values[4:])  # Linformer, Performer, elu + 1, spreads
    spread, variance, calm, calm_variance = values[7:]
    assert spread > 20 and calm <= 4  # MiniLM's long q and k; the cooled head is well conditioned
    assert variance == pytest.approx(np.expm1(spread), rel=0.02)  # exp(|q + k|²/√d) - 1, as shown
    assert calm_variance == pytest.approx(np.expm1(calm), rel=0.02)
    assert any("relative variance exp(|q + k|²/√d) − 1" in m.value for m in at.markdown)
    assert any("save nothing" in m.value for m in at.markdown)  # top-k and sparsemax, said plainly
    assert any("Performer" in s.value for s in at.subheader)
    families = [link for link in at.get("page_link") if not link.proto.label.startswith(("Back:", "Next:"))]
    assert len(families) == 6  # one per page each family points at (the Start here path's links apart)
    n = at.slider(key="linformer_kp").max
    at.selectbox(key="linformer_projection").set_value("segment means").run()
    at.slider(key="linformer_kp").set_value(n).run()
    assert not at.exception and not at.error
    assert metric_values(at)[4] < 1e-6  # kp = n segment means is the identity: softmax itself
    at.select_slider(key="performer_m").set_value(2048).run()
    assert not at.exception and not at.error


def test_matrix_tab_reproduces_the_head_as_block_matrices():
    at = run_page("As one matrix (Fig. 12.2)")
    assert_clean(at)
    assert float(at.metric[0].value) < 1e-5
    at.slider(key="bm_layer").set_value(4).run()
    at.slider(key="bm_dims").set_value(5).run()
    assert_clean(at)
    assert float(at.metric[0].value) < 1e-5 and float(at.metric[1].value) > 0
