"""The masking page's textbook additions: Swin patch merging and the GPT vs BERT objectives."""

from __future__ import annotations

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE_FILE = str(ROOT / "pages" / "5_Masking_Patterns.py")


def run_page(view: str, **state) -> AppTest:
    at = AppTest.from_file(PAGE_FILE, default_timeout=180)
    at.session_state["view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_swin_tab_merges_down_to_one_window():
    at = run_page("Images (Swin)")
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table["windows"]) == [4, 1]  # 8 x 8 patches, windows of 4
    at.slider(key="swin_h").set_value(16).run()
    at.slider(key="swin_w").set_value(13).run()
    at.slider(key="swin_window").set_value(2).run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert table["windows"].iloc[-1] == 1 and list(table["channels"])[:2] == [4, 8]


def test_objectives_tab_moves_its_widgets():
    at = run_page("GPT vs BERT objectives")
    assert_clean(at)
    table = at.dataframe[0].value
    assert list(table["hidden word"]) == ["barks", "the"]
    at.multiselect(key="bert_masked_7").set_value([0, 1, 2]).run()
    assert_clean(at)
    assert len(at.dataframe[0].value) == 3
    at.text_input(key="bert_text").set_value("lucy stayed home because she was late").run()
    at.multiselect(key="bert_masked_7").set_value([4]).run()
    assert_clean(at)
    assert at.dataframe[0].value["best guesses"].iloc[0].startswith("she")
    at.text_area(key="gpt_text").set_value("The sky is blue.").run()
    assert_clean(at)


def test_objectives_tab_bad_input():
    at = run_page("GPT vs BERT objectives", gpt_text="Hi", bert_text="   ")
    assert not at.exception
    assert at.error
    at = run_page("GPT vs BERT objectives", bert_text="the dog " * 20)
    assert_clean(at)  # a long sentence is cut with a warning
    assert any("at most 14" in w.value for w in at.warning)


def test_using_the_encoder_tab():
    at = run_page("Using the encoder")
    assert_clean(at)
    p_false, flagged = (m.value for m in at.metric)
    assert 0 <= float(p_false) <= 1
    table = at.dataframe[0].value
    assert list(table["baseline"])[0] == 0.5 and (table["probe (held out)"] > table["baseline"]).all()
    at.text_input(key="encoder_sentence").set_value("after monday comes tuesday").run()
    assert_clean(at)
    at.text_input(key="encoder_sentence").set_value("the zebra barks").run()
    assert not at.exception and any("zebra" in e.value for e in at.error)
