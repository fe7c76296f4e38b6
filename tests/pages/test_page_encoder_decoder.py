"""The encoder-decoder page: widgets moved in AppTest, bad input, and a real browser."""

from __future__ import annotations

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = "pages/9_Encoder_Decoder.py"
PAGE_FILE = str(ROOT / PAGE)
SOURCE_KEY = "source_date-bart"


def run_page(**state) -> AppTest:
    at = AppTest.from_file(PAGE_FILE, default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_default_page_decodes_the_example():
    at = run_page()
    assert_clean(at)
    assert [c.value for c in at.main.code] == ["2026-11-22"]
    assert at.slider(key="step").value == 10  # 11 steps: ten characters and the end token


def test_moving_every_widget():
    at = run_page()
    at.sidebar.radio(key="method").set_value("Beam search").run()
    at.sidebar.slider(key="beams").set_value(3).run()
    assert_clean(at)
    assert at.code[0].value == "2026-11-22"
    assert at.dataframe  # the beams kept at this step
    at.slider(key="step").set_value(2).run()
    for label in (
        "Decoder masked self-attention",
        "Encoder self-attention",
        "Cross-attention (target → source)",
    ):
        at.radio(key="kind").set_value(label).run()
        assert_clean(at, label)
    at.slider(key="layer_cross").set_value(0).run()
    at.slider(key="head_cross").set_value(3).run()
    at.sidebar.slider(key="max_steps").set_value(4).run()
    assert_clean(at)
    assert any("No end token" in i.value for i in at.info)
    assert at.code[0].value == "2026"


def test_empty_source_gets_a_message():
    at = run_page(**{SOURCE_KEY: "   "})
    assert not at.exception
    assert any("empty" in w.value for w in at.warning)


def test_very_long_source_is_cut_with_a_warning():
    at = run_page(**{SOURCE_KEY: "twenty second of november " * 400})
    assert_clean(at)
    assert any("first 32" in w.value for w in at.warning)


def test_words_the_model_never_saw_are_flagged():
    at = run_page(**{SOURCE_KEY: "<b>hello</b> world"})
    assert_clean(at)
    assert any("unknown" in w.value for w in at.warning)


def test_a_model_that_cannot_load_gets_a_message():
    at = run_page(model="Other: a Hugging Face id or local folder...", model_custom="/no/such/folder")
    assert not at.exception
    assert at.error


def test_a_model_of_another_kind_gets_a_message():
    at = run_page(model="Other: a Hugging Face id or local folder...", model_custom="minilm")
    assert not at.exception
    assert any("encoder-decoder" in e.value for e in at.error)
