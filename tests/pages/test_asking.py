"""The ask and reveal widgets of each question kind, answered the ways a student can, on real models."""

from __future__ import annotations

import pytest
from conftest import assert_clean
from streamlit.testing.v1 import AppTest

QUESTIONS = {
    "next_token": {
        "kind": "next_token",
        "prompt": "Next?",
        "text": "The capital of France is",
        "model": "smollm2",
    },
    "number": {
        "kind": "number",
        "prompt": "P?",
        "text": "The capital of France is",
        "measure": "probability",
        "target": " Paris",
        "low": 0,
        "high": 1,
        "tolerance": 0.1,
        "model": "smollm2",
    },
    "entropy": {
        "kind": "number",
        "prompt": "H?",
        "text": "The cat sat on the mat.",
        "measure": "entropy",
        "layer": 0,
        "head": 0,
        "word": "cat",
        "low": 0,
        "high": 3,
        "tolerance": 0.5,
        "model": "minilm",
    },
}


def asking_script(data: dict) -> None:
    import streamlit as st

    from txviz.app import ui
    from txviz.app.lecture import asking
    from txviz.lecture.questions import question_from

    question = question_from(data)
    loaded = ui.load_model(data["model"])
    answer = asking.ask(question, "q", asking.offered(question, loaded))
    if answer is not None:
        found = asking.live_truth(question, loaded)
        st.session_state["right"] = asking.reveal(question, found, data["model"], "q", answer)
        st.session_state["truth"] = found.value


def app_for(name: str) -> AppTest:
    return AppTest.from_function(asking_script, args=(QUESTIONS[name],), default_timeout=300).run()


def test_a_typed_next_token_is_scored_against_the_models_own():
    app = app_for("next_token")
    assert_clean(app)
    (pick,) = app.radio
    assert len(pick.options) == 5 and pick.options[-1] == "Type another token"  # four and "type"
    pick.set_value("Type another token").run()
    app.text_input(key="q_typed").input("  paris ").run()  # case and spaces do not matter
    app.button(key="q_lock").click().run()
    assert_clean(app)
    assert app.session_state["truth"] == "Paris" and app.session_state["right"]
    assert app.get("plotly_chart"), "the candidates that explain the truth"
    assert app.radio[0].disabled  # locked in: answered once


@pytest.mark.parametrize("name", ["number", "entropy"])
def test_a_slider_guess_is_right_within_the_tolerance(name):
    app = app_for(name)
    app.slider(key="q_pick").set_value(0.0).run()
    app.button(key="q_lock").click().run()
    assert_clean(app)
    truth = app.session_state["truth"]
    assert app.session_state["right"] == (truth <= QUESTIONS[name]["tolerance"])
    said = [m.value for m in (*app.success, *app.warning)]
    assert len(said) == 1 and f"{truth:.3f}" in said[0]
