"""The encoder-decoder page's textbook tabs: cross-attention arithmetic and teacher forcing."""

from __future__ import annotations

import json

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE_FILE = str(ROOT / "pages" / "9_Encoder_Decoder.py")


def run_page(view: str, **state) -> AppTest:
    at = AppTest.from_file(PAGE_FILE, default_timeout=120)
    at.session_state["view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_cross_attention_arithmetic_tab():
    at = run_page("Cross-attention arithmetic")
    assert_clean(at)
    assert any("Recomputed here" in s.value for s in at.success)
    at.slider(key="x_layer").set_value(0).run()
    at.slider(key="x_head").set_value(3).run()
    at.selectbox(key="x_query").set_value(5).run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert abs(table["softmax (recomputed)"].sum() - 1) < 1e-9
    assert (table["softmax (recomputed)"] - table["captured weight"]).abs().max() < 1e-5
    at.sidebar.slider(key="max_steps").set_value(2).run()
    assert_clean(at)


def test_teacher_forcing_tab():
    at = run_page("Teacher forcing")
    assert_clean(at)
    values = [m.value for m in at.metric]
    assert values[0] == "1955-05-05" and values[2] == "2"
    at.text_input(key="tf_reference_date-bart").set_value("1955-05-05").run()
    assert_clean(at)
    assert at.metric[2].value == "none"
    at.text_input(key="tf_reference_date-bart").set_value("").run()
    assert not at.exception and any("empty" in e.value for e in at.error)


def test_cross_attention_arithmetic_escapes_tokens_once():
    """Plotly reads HTML entities: '<' must reach it as '&lt;', not '&amp;lt;' (shown as '&lt;')."""
    at = run_page("Cross-attention arithmetic")
    assert not at.exception and not at.error
    layout = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]
    labels = [t for axis in layout.values() if isinstance(axis, dict) for t in axis.get("ticktext", [])]
    title = layout["title"]["text"]
    assert "&lt;/s&gt;" in labels, labels  # the source's end token, escaped once
    assert not [text for text in [*labels, title] if "&amp;" in text]


def test_all_positions_at_once_tab():
    at = run_page("All positions at once")
    assert_clean(at)
    greedy, parallel_output = (m.value for m in at.metric)
    assert greedy == "2026-11-22"
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert not any(t.startswith("Exact match") for t in titles)  # the held-out scoring waits for its toggle
    at.toggle(key="parallel_heldout").set_value(True).run()
    assert_clean(at)
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any(t.startswith("Exact match on 200 held-out dates") for t in titles), titles
    assert any(
        "On 200 held-out dates greedy decoding is right on 100.0% in 11 passes" in m.value
        for m in at.markdown
    )
    at.radio(key="parallel_strategy").set_value("jacobi").run()
    at.slider(key="parallel_passes").set_value(11).run()
    assert_clean(at)
    assert at.metric[1].value == "2026-11-22"  # eleven Jacobi passes are greedy's output
    at.slider(key="parallel_passes").set_value(1).run()
    assert_clean(at)
