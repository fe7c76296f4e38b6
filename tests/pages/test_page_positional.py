"""The positional encoding lab: every tab opens, its widgets move, bad input gets a message."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.positional import encodings as pe

PAGE = str(ROOT / "pages" / "3_Positional_Encoding.py")


def run_page(view: str = "Sinusoids", **state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_defaults_are_the_textbook_figure():
    at = run_page()
    assert not at.exception and not at.error and not at.warning
    assert (at.slider(key="n").value, at.slider(key="d").value) == (60, 32)
    assert at.select_slider(key="base").value == 10000
    assert at.multiselect(key="columns").value == [6, 7, 8, 9]
    at.slider(key="n").set_value(120).run()
    at.slider(key="d").set_value(64).run()
    at.select_slider(key="base").set_value(100).run()
    at.multiselect(key="columns").set_value([0, 1, 62, 63]).run()
    assert_clean(at)


def test_odd_d_is_explained_not_a_traceback():
    at = run_page(d=7)
    assert_clean(at)  # an odd d is explained in a warning
    assert any("odd" in w.value for w in at.warning)
    at = run_page("Shift = rotation", d=7)
    assert not at.exception
    assert any("even d" in e.value for e in at.error)


def test_small_d_keeps_valid_column_defaults():
    at = run_page(d=4)
    assert_clean(at)
    assert at.multiselect(key="columns").value == [0]


@pytest.mark.parametrize(
    ("view", "widgets"),
    [
        ("Binary", {"bits": 5}),
        ("Shift = rotation", {"t": 30, "phi": 40}),
        ("Similarity", {"measure": "cosine"}),
    ],
)
def test_pure_tabs_move_their_widgets(view, widgets):
    at = run_page(view)
    assert_clean(at)
    for key, value in widgets.items():
        element = next(w for w in at.main if getattr(w, "key", None) == key)
        element.set_value(value).run()
        assert_clean(at)


def test_shift_tab_reports_the_tiny_difference():
    at = run_page("Shift = rotation")
    value = float(at.metric[0].value)
    assert value < 1e-6
    assert value == pytest.approx(pe.shift_check(10, 5, 32).max_abs_difference, abs=1e-12)
    assert "float64 rounding" in at.metric[0].help
    (shift,) = [c for c in at.get("plotly_chart") if "Shift by" in c.proto.spec]
    spec = json.loads(shift.proto.spec)
    assert "equal up to float rounding" in spec["layout"]["title"]["text"]
    gap = spec["data"][2]
    assert gap["name"] == "float rounding" and gap["marker"]["color"] == "grey"  # not a red "difference"


def test_learned_tab_shows_minilm():
    at = run_page("Learned (MiniLM)")
    assert_clean(at)
    assert any("real embeddings.position_embeddings" in c.value for c in at.caption)


def test_rotary_tab_reads_smollm2():
    at = run_page("Rotary (SmolLM2)")
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["θ (rope_theta)"] == "100,000" and metrics["d_head"] == "64"
    assert float(metrics["Largest spread along any diagonal"]) < 1e-9
    at.slider(key="rope_n").set_value(100).run()
    at.number_input(key="rope_seed").set_value(3).run()
    assert_clean(at)


def test_added_tab_and_its_empty_text():
    at = run_page("X + P")
    assert_clean(at)
    at.radio(key="xp_source").set_value("sinusoid (C = 10,000)").run()
    assert_clean(at)
    at.text_area(key="xp_text").set_value("  ").run()
    assert not at.exception
    assert any("empty" in w.value for w in at.warning)


def test_minilm_learned_positions_are_its_real_matrix(minilm):
    learned = pe.learned_position_embeddings(minilm.model)
    assert learned.shape == (512, 384)
    weight = minilm.model.embeddings.position_embeddings.weight.detach().numpy()
    np.testing.assert_array_equal(learned, weight)
    pcs = pe.principal_components(learned)
    assert pcs.scores.shape == (512, 2) and 0 < pcs.explained_ratio.sum() <= 1
    # Learned neighbours are more alike than distant positions.
    by_offset = pe.similarity_by_offset(pe.cosine_similarity(learned))
    assert by_offset[1] > by_offset[100]


def test_smollm2_rope_frequencies_are_the_ones_it_uses(smollm2):
    spec = pe.rope_spec(smollm2.config)
    assert (spec.theta, spec.head_dim) == (100000.0, 64)
    np.testing.assert_allclose(pe.model_inv_freq(smollm2.model), spec.inv_freq, rtol=1e-6)
    assert pe.buffer_difference(smollm2.model, spec) < 1e-6


def test_token_embeddings_are_minilm_rows(minilm):
    tokens, x = pe.token_embeddings(minilm, "the cat sat")
    assert tokens == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    ids = minilm.tokenizer("the cat sat")["input_ids"]
    table = minilm.model.embeddings.word_embeddings.weight.detach().numpy()
    np.testing.assert_array_equal(x, table[ids])
    with pytest.raises(pe.PositionalError, match="empty"):
        pe.token_embeddings(minilm, " ")
