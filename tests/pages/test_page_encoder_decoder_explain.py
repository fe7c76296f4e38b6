"""Encoder Decoder's 'Why this token?': a decoding step's attribution to the source, every widget moved."""

from __future__ import annotations

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "9_Encoder_Decoder.py")


def chart_specs(at: AppTest) -> str:
    return " ".join(str(c.proto.spec) for c in at.get("plotly_chart"))


def test_source_attribution_beside_cross_attention_for_every_method():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert "Source tokens" not in chart_specs(at)
    at.toggle(key="explain_source").set_value(True).run()
    assert_clean(at)
    assert "Step 10: why" in chart_specs(at) and "cross-attention, last layer mean" in chart_specs(at)
    at.slider(key="step").set_value(2).run()
    for method in ("ig", "ablation", "gradient"):
        at.radio(key="explain_method").set_value(method).run()
        assert_clean(at)
        assert "Step 2: why" in chart_specs(at)
    at.sidebar.radio(key="method").set_value("Beam search").run()
    assert_clean(at)
