"""The encoder-decoder page's retraining tabs: the decoder reading an earlier encoder layer, and REINFORCE."""

from __future__ import annotations

import json

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.seq2seq import variants

PAGE_FILE = str(ROOT / "pages" / "9_Encoder_Decoder.py")


def run_page(view: str) -> AppTest:
    at = AppTest.from_file(PAGE_FILE, default_timeout=120)
    at.session_state["view"] = view
    return at.run()


def titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def test_cross_attention_layer_tab():
    at = run_page("Cross-attention reads layer l")
    assert_clean(at)
    results = variants.load_results()
    assert any(t.startswith("Exact match on 1,000 held-out days") for t in titles(at)), titles(at)
    assert any("decoder layer's cross-attention reads the encoder's **last**" in m.value for m in at.markdown)
    stored, live = at.dataframe[0].value, at.dataframe[1].value
    assert list(stored["held-out exact match"]) == [
        results["variants"][str(layer)]["heldout_exact_match"] for layer in variants.LAYERS
    ]
    assert len(live) == 3
    # the shipped date-bart reading its last layer is the page's own greedy output of the default source
    assert live["date-bart, not retrained"].iloc[2] == "2026-11-22"


def test_training_on_exact_match_tab():
    at = run_page("Training on exact match")
    assert_clean(at)
    rl = variants.load_results()["reinforce"]
    assert any("same under-trained start" in t for t in titles(at)), titles(at)
    table = at.dataframe[0].value
    expected = [rl["start"], rl["ce"]["final"], rl["scst"]["final"], rl["scst_low"]["final"]]
    assert list(table["held-out exact match"]) == expected
    assert any("Reward: exact match only" in c.value for c in at.caption)
