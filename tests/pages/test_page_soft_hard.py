"""The soft vs hard page: widgets move without errors, bad input gets a message, a browser opens it."""

from __future__ import annotations

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "7_Soft_vs_Hard.py")
SHORT = "The cat sat on the mat."  # a short text keeps each rerun of five forward passes quick


def run_page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_widgets_move_without_errors():
    at = run_page(text=SHORT)
    assert_clean(at)
    at.slider(key="layer").set_value(3).run()
    at.slider(key="head").set_value(7).run()
    at.radio(key="measure").set_value("keys kept").run()
    at.number_input(key="temperature").set_value(2.0).run()
    at.number_input(key="k").set_value(4).run()
    at.slider(key="example").set_value(12).run()
    assert_clean(at)
    tables = [d.value for d in at.dataframe]
    assert list(tables[-1]["accuracy, read with argmax"]) == [1.0, 1.0]  # the shipped runs
    assert any("Jain and Wallace" in i.value and "Wiegreffe" in i.value for i in at.info)
    assert any("Zeros save no work here: every normalizer reads all n² scores" in c.value for c in at.caption)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("temperature", 0.0, "Temperature must be positive"),
        ("temperature", -0.5, "Temperature must be positive"),
        ("k", 12, "larger than the text's 9 tokens"),
        ("k", 0, "at least 1"),
    ],
)
def test_bad_parameters_get_a_clear_message(key: str, value: float, message: str):
    at = run_page(text=SHORT, **{key: value})
    assert not at.exception
    assert any(message in e.value for e in at.error)


def test_live_training_then_back_to_the_shipped_runs():
    at = run_page(text=SHORT)
    at.slider(key="steps").set_value(50)
    at.slider(key="n_pairs").set_value(4)
    at.button[0].click().run()  # the form's submit button is the page's first button
    assert_clean(at)
    assert any(c.value == "Your run" for c in at.caption)
    assert [row["steps"] for row in at.dataframe[-1].value.to_dict("records")] == [50, 50]
    at.button(key="reset").click().run()
    assert_clean(at)
    assert any(c.value.startswith("Shipped runs") for c in at.caption)


def test_decoder_shows_greedy_continuations():
    at = run_page(model="smollm2", text="The cat sat", new_tokens=1, k=2)
    assert_clean(at)
    continuations = at.dataframe[0].value
    assert len(continuations) == 5
    assert list(continuations["normalizer"])[-1] == "hard (argmax)"
