"""The entailment page: every example and the equations' steps draw, bad sentences get a message."""

from __future__ import annotations

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "15_Entailment.py")
LECTURE = "The lecture's example (MultiNLI)"


def run_page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_lecture_example_shows_every_step():
    at = run_page(example=LECTURE)
    assert not at.exception and not at.error
    formulas = [x.value.strip("$\n") for x in at.latex]
    numbered = {f.split("=")[0].strip(): f.rsplit("(", 1)[1] for f in formulas}
    # the book's order (probml 15.4.6): each side is attended, compared and summed in turn
    assert numbered == {
        "e_{ij}": "15.46)",
        r"\beta_i": "15.47)",
        "v_{A,i}": "15.48)",
        "v_A": "15.49)",
        r"\alpha_j": "15.50)",
        "v_{B,j}": "15.51)",
        "v_B": "15.52)",
        r"\hat{y}": "15.53)",
    }
    assert any("never seen in training" in i.value and "`skimming`" in i.value for i in at.info)
    assert at.subheader[0].value.startswith("Verdict: ")
    assert any("No natural-language-inference corpus" in m.value for m in at.markdown)


def test_every_example_runs():
    at = run_page()
    for example in at.selectbox(key="example").options:
        at.selectbox(key="example").set_value(example).run()
        assert_clean(at, example)


@pytest.mark.parametrize(("field", "value", "message"), [("premise", "", "premise has no words"),
                                                          ("hypothesis", " ?! ", "hypothesis has no words")])  # fmt: skip
def test_empty_sentences_get_a_message(field: str, value: str, message: str):
    at = run_page(example=LECTURE, **{f"{field}_{LECTURE}": value})
    assert not at.exception
    assert any(message in e.value for e in at.error)


def test_very_long_sentence_is_cut_with_a_notice():
    at = run_page(example=LECTURE, **{f"premise_{LECTURE}": "the dog is running " * 1250})
    assert_clean(at)
    assert any("5,000 words; the first 60 are used" in w.value for w in at.warning)


def test_the_page_opens_on_an_example_the_model_gets_right():
    at = run_page()
    assert_clean(at)
    opened = at.selectbox(key="example")
    assert opened.value != LECTURE and not at.info  # every word of it was seen in training
    meant = opened.format_func(opened.value).rsplit(": ", 1)[1]
    assert at.subheader[0].value.startswith(f"Verdict: {meant} ")
    assert any("What to notice" in c.value for c in at.caption)


def test_the_lecture_example_is_one_click_away_and_its_note_is_true():
    at = run_page()
    assert "all 14 of its words are unseen" in at.selectbox(key="example").help
    at.selectbox(key="example").set_value(LECTURE).run()
    assert_clean(at)
    assert any("14 words never seen in training" in i.value for i in at.info)
