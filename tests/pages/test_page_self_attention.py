"""The self-attention page: widgets move without errors, and the real query matches the explorer row."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.core.tracing import trace_text
from txviz.selfattention import toy as ta

PAGE = str(ROOT / "pages" / "1_Self_Attention.py")
TEXT = "The animal didn't cross the street because it was too tired."


def run_page(view: str = "One head, by hand", **state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_toy_tab_moves_its_widgets():
    at = run_page()
    assert_clean(at)
    assert any("every row sums to one" in info.value for info in at.info)
    at.slider(key="n_tokens").set_value(5).run()
    at.slider(key="d_model").set_value(6).run()
    at.number_input(key="seed").set_value(7).run()
    at.toggle(key="scaled").set_value(False).run()
    at.selectbox(key="query").set_value(4).run()
    assert_clean(at)
    table = at.dataframe[-1].value  # the first one is the editable X
    assert len(table) == 5 and abs(table["weight a[n, m]"].sum() - 1) < 1e-9


def test_several_heads_tab():
    at = run_page("Several heads", d_model=6)
    assert_clean(at)
    at.select_slider(key="n_heads").set_value(3).run()
    assert_clean(at)
    at.select_slider(key="n_heads").set_value(6).run()
    assert_clean(at)


def test_blank_cell_in_x_gives_a_clear_message():
    with pytest.raises(ta.ToyAttentionError, match="finite"):
        ta.self_attention_head(np.array([[1.0, np.nan]]), ta.toy_heads(ta.ToyConfig(1, 2, 1))[0])


@pytest.mark.parametrize("model", ["minilm", "smollm2"])
def test_real_model_tab_moves_its_widgets(model):
    at = run_page("On a real model", real_model=model)
    assert_clean(at)
    at.slider(key="real_layer").set_value(3).run()
    at.slider(key="real_head").set_value(2).run()
    at.selectbox(key="real_query").set_value(5).run()
    assert_clean(at)
    rows = at.dataframe[0].value
    assert abs(rows["captured weight"].sum() - 1) < 1e-5
    np.testing.assert_allclose(rows["softmax (recomputed)"], rows["captured weight"], atol=1e-5)


def test_empty_text_gives_a_message():
    at = run_page("On a real model", real_text="   ")
    assert not at.exception
    assert any("empty" in w.value for w in at.warning)


@pytest.mark.parametrize("fixture", ["minilm", "smollm2"])
def test_real_query_equals_the_explorer_row(request, fixture):
    loaded = request.getfixturevalue(fixture)
    explorer = trace_text(loaded, TEXT)  # what the attention explorer draws
    recorded = trace_text(loaded, TEXT, record=("scores", "queries", "keys"))
    assert np.array_equal(explorer.weights, recorded.weights)
    for layer, head, query in [(0, 0, 0), (2, 1, 5), (loaded.n_layers - 1, loaded.n_heads - 1, 9)]:
        step = ta.real_query_step(recorded, layer, head, query)
        np.testing.assert_array_equal(step.captured_weights, explorer.weights[layer, head, query])
        assert step.max_score_difference < 1e-4
        assert step.max_weight_difference < 1e-5
        assert abs(step.weights.sum() - 1) < 1e-9
        # q . k / sqrt(d_head) by hand for the first key
        expected = float(recorded.queries[layer, head, query] @ recorded.keys[layer, head, 0]) / np.sqrt(
            recorded.queries.shape[-1]
        )
        assert step.scores[0] == pytest.approx(expected, rel=1e-5, abs=1e-5)
    if loaded.is_causal:
        assert step.masked[query + 1 :].all() and not step.masked[: query + 1].any()
        assert (step.captured_weights[query + 1 :] == 0).all()


def test_long_text_is_cut_with_a_notice():
    at = run_page("On a real model", real_text="the cat sat on the mat. " * 60)
    assert_clean(at)
    assert any("only the first 128" in w.value for w in at.warning)


def test_prince_figure_12_1_preset_shows_the_books_numbers():
    at = run_page(fig_12_1=True)
    assert not at.exception and not at.error
    assert any("Fig. 12.1" in info.value for info in at.info)
    first = at.dataframe[-1].value["weight a[n, m]"]
    assert [f"{w:.2f}" for w in first] == ["0.10", "0.30", "0.60"]
    at.selectbox(key="query").set_value(1).run()
    second = at.dataframe[-1].value["weight a[n, m]"]
    assert [f"{w:.2f}" for w in second] == ["0.50", "0.20", "0.30"]
    at.toggle(key="scaled").set_value(False).run()
    assert [f"{w:.2f}" for w in at.dataframe[-1].value["weight a[n, m]"]] == ["0.50", "0.20", "0.30"]


def test_several_heads_tab_shows_the_two_heads_toy():
    at = run_page("Several heads")
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert list(table["model"]) == ["1 head", "2 heads", "chance"]
    assert table["held-out both"][1] > 0.99 > 0.3 > table["held-out both"][0]
    at.number_input(key="two_heads_example").set_value(17).run()
    assert not at.exception and not at.error


@pytest.mark.parametrize("view", ["Several heads", "Additive (Bahdanau)"])
def test_other_tabs_say_the_figure_12_1_preset_is_not_theirs(view):
    assert not any("first tab only" in c.value for c in run_page(view).caption)
    at = run_page(view, fig_12_1=True)
    assert not at.exception and not at.error
    assert any("Fig. 12.1 applies to the first tab only" in c.value for c in at.caption)
