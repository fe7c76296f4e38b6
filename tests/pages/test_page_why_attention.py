"""The why-attention page: widgets move without errors, every tab draws, bad sizes get a message."""

from __future__ import annotations

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "14_Why_Attention.py")


def run_page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_path_tab_moves_without_errors():
    at = run_page()
    assert_clean(at)
    assert any("y_5 reads both" in m.value for m in at.markdown)
    at.slider(key="depth").set_value(5).run()
    at.number_input(key="n").set_value(12).run()
    at.number_input(key="k").set_value(2).run()
    assert_clean(at)


def test_cost_and_table_tabs():
    at = run_page(n=6, view="Cost")
    assert_clean(at)
    at.button(key="remeasure").click().run()
    assert_clean(at)
    assert any("self-attention and RNN (nn.RNN, tanh): cross at n ≈ 64" in m.value for m in at.markdown)
    at.radio(key="metric").set_value("wall time").run()
    assert_clean(at)
    at.session_state["view"] = "Table 15.1"
    at.run()
    assert_clean(at)
    rows = at.dataframe[0].value
    assert list(rows.loc["measured at n = 6, k = 3"]) == [
        "3 layers",
        "2 layers",
        "6 recurrent steps",
        "1 layer",
    ]
    assert list(rows.loc["complexity per layer (book)"]) == ["O(k n d²)", "O(k n d²)", "O(n d²)", "O(n² d)"]
    assert list(rows.loc["maximum path length (book, Table 15.1)"])[:2] == ["O(log_k n)", "O(log_k n)"]
    assert list(rows.loc["maximum path length (book, its text)"])[0] == "O(n/k): contiguous kernels"
    assert list(rows.loc["FLOPs measured: grow as"])[-1] == "n^2.00 · d^1.00"


def test_bad_sizes_get_a_message():
    at = run_page(k=1)
    assert not at.exception
    assert any("at least 2" in e.value for e in at.error)
    at = run_page(n=4, k=9)
    assert_clean(at)
    assert any("larger than n = 4" in i.value for i in at.info)
    at = run_page(n=1)
    assert_clean(at)
    assert any("n = 1" in i.value for i in at.info)


def test_rnn_forgetting_section():
    at = run_page()
    assert not at.exception and not at.error
    assert any("How fast an RNN forgets" in s.value for s in at.subheader)
    at.slider(key="forget_n").set_value(12).run()
    assert not at.exception and not at.error
    assert any("halves every" in c.value for c in at.caption)


def test_the_cost_tab_measures_only_on_its_button():
    at = run_page(view="Cost")
    assert_clean(at)
    assert not at.get("plotly_chart")
    assert not any("Where the lines cross" in m.value for m in at.markdown)
    assert at.button(key="remeasure").label.startswith("Count FLOPs")
    at.session_state["view"] = "Table 15.1"
    at.run()
    assert_clean(at)
    assert not at.dataframe  # the table is measured too
    at.button(key="remeasure").click().run()
    assert_clean(at)
    assert at.dataframe and at.button(key="remeasure").label == "Measure again"


def test_convolution_tab_matches_conv2d_until_the_heads_soften():
    at = run_page(view="Attention = convolution")
    assert_clean(at)
    assert float(at.metric[0].value) < 1e-5 and at.metric[1].value == "9"
    at.radio(key="conv_k").set_value(5).run()
    at.selectbox(key="conv_kernel").set_value("random (seed 0)").run()
    assert_clean(at)
    assert float(at.metric[0].value) < 1e-5 and at.metric[1].value == "25"
    at.select_slider(key="conv_alpha").set_value(0.3).run()
    assert_clean(at)
    assert float(at.metric[0].value) > 1e-3 and float(at.metric[2].value) < 0.9


def test_nested_phrases_tab_draws_and_follows_the_sentence():
    from txviz.why import hierarchy

    at = run_page(view="Nested phrases")
    assert_clean(at)
    (table,) = at.dataframe
    assert list(table.value["phrase"]) == list(hierarchy.EXAMPLES[0].levels)
    assert any("flat-distance" in c.value.lower() for c in at.caption)
    at.selectbox(key="hier_example").set_value(hierarchy.EXAMPLES[2].text).run()
    assert_clean(at)
    assert list(at.dataframe[0].value["phrase"]) == list(hierarchy.EXAMPLES[2].levels)
