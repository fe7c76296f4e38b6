"""Pages with the sidebar's precision set to bfloat16: the views whose code reads the model's weights
or gradients directly (the block as code, 'Why this token?') run and show no error."""

from __future__ import annotations

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

TIMEOUT = 300


def opened(script: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / script), default_timeout=TIMEOUT)
    at.session_state["precision"] = "bfloat16"
    at.run()
    assert_clean(at)
    assert at.sidebar.selectbox(key="precision").value == "bfloat16"
    return at


def test_the_block_as_code_in_bfloat16():
    at = opened("11_Transformer_Block.py")
    at.session_state["block_view"] = "One block"
    at.run()
    assert_clean(at)
    assert "E = LayerNorm(FeedForward(Z) + Z)" in at.code[0].value


def test_why_this_token_in_bfloat16():
    at = opened("8_Live_Generation.py")
    at.text_area(key="gen_prompt").input("The capital of France is")
    at.number_input(key="gen_max").set_value(2)
    at.button(key="gen_go").click().run()
    assert_clean(at)
    at.toggle(key="gen_explain").set_value(True).run()
    assert_clean(at)
    assert "Logit lens" in " ".join(str(c.proto.spec) for c in at.get("plotly_chart"))
