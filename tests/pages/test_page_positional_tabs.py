"""The positional page's textbook additions: the 512 limit, one-hot lookup, Shaw's relative bias."""

from __future__ import annotations

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "3_Positional_Encoding.py")


def run_page(view: str, **state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_learned_tab_says_what_happens_past_512():
    at = run_page("Learned (MiniLM)")
    assert_clean(at)
    assert any("512 position vectors" in w.value for w in at.warning)
    at.slider(key="learned_wanted").set_value(512).run()
    assert not at.exception and not at.warning and at.success


def test_added_tab_shows_the_one_hot_product():
    at = run_page("X + P")
    assert_clean(at)
    assert float(at.metric[0].value) == 0.0
    at.text_area(key="xp_text").set_value("a different sentence here").run()
    assert_clean(at)


def test_relative_tab_moves_its_widgets():
    at = run_page("Relative (Shaw)")
    assert_clean(at)
    at.slider(key="shaw_n").set_value(40).run()
    at.slider(key="shaw_clip").set_value(0).run()
    at.number_input(key="shaw_seed").set_value(9).run()
    assert_clean(at)
    assert float(at.metric[0].value) < 1e-9
    assert len(at.dataframe[0].value) == 4


def test_adding_in_disjoint_dimensions_is_concatenating():
    at = run_page("Add = concatenate")
    assert_clean(at)
    assert [m.value for m in at.metric[:2]] == ["0.0e+00", "0.0e+00"]
    at.radio(key="dc_source").set_value("one-hot").run()
    assert_clean(at)
    assert at.metric[0].value == "0.0e+00"
    at.slider(key="dc_k").set_value(3).run()  # fewer dimensions than tokens: one-hot cannot fit
    assert "K >= n" in at.error[0].value


def test_floater_tab_sets_three_position_matrices_side_by_side():
    at = run_page("FLOATER", n=30, d=7)
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table.columns) == ["method", "inductive", "data-driven", "parameter-efficient"]
    assert len(table) == 5
    assert len(at.get("plotly_chart")) == 3  # the sinusoid, the ODE and the RNN
    at.slider(key="floater_strength").set_value(0.0).run()
    assert_clean(at)
    at.slider(key="floater_strength").set_value(0.5).run()
    at.number_input(key="floater_seed").set_value(4).run()
    assert_clean(at)
    assert any("with s = 0 the flow is the sinusoid" in c.value for c in at.caption)
    at.slider(key="n").set_value(1).run()  # one position: no neighbours to compare
    assert_clean(at)
