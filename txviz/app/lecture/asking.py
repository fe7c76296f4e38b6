"""Asking a lecture question and revealing its truth: the widgets, and the model work cached for everyone."""

from __future__ import annotations

from typing import Any

import streamlit as st

from txviz.app import caching, projector, sessions
from txviz.lecture import figures
from txviz.lecture.questions import Question, Truth, choices, is_right, truth
from txviz.lecture.questions.base import NUMBER, OPTION, TOKEN, TYPED_TOKEN

TYPED = "Type another token"


def model_of(question: Question, lecture_model: str) -> str:
    """The model that answers: the question's own, else the lecture's."""
    return question.model or lecture_model


@caching.cached(max_entries=64, spinner=False)
def _offered(loaded, question: Question) -> tuple[str, ...]:
    return choices(question, loaded)


@caching.cached(max_entries=64, spinner="The model is answering...")
def _truth(loaded, question: Question) -> Truth:
    return truth(question, loaded)


def offered(question: Question, loaded=None) -> tuple[str, ...]:
    """What the asker offers (tokens to click, four next tokens, options), the same for every session.

    A model question needs ``loaded``, the model that answers it; a UserError says when it cannot.
    """
    if not question.choices_need_model:
        return choices(question)
    return _offered(loaded, question)


def live_truth(question: Question, loaded=None) -> Truth:
    """The truth now, from the live model (cached for every session); a choice's from the file."""
    if not question.asks_model:
        return truth(question)
    return _truth(loaded, question)


def _picked(question: Question, key: str) -> Any:
    """The answer the widgets hold now (None when there is none yet)."""
    value = st.session_state.get(f"{key}_pick")
    shape = question.answer_form.shape
    if shape == TYPED_TOKEN and value == TYPED:
        return str(st.session_state.get(f"{key}_typed") or "").strip() or None
    if shape == NUMBER and value is not None:
        return float(value)
    return value


def _lock(question: Question, key: str) -> None:
    st.session_state[f"{key}_answer"] = _picked(question, key)


def _answer_widget(question: Question, key: str, options: tuple[str, ...], locked: bool) -> None:
    """The widget of the question's answer form (by its shape, whatever the kind)."""
    pick, form = f"{key}_pick", question.answer_form
    if form.shape == TOKEN:
        clickable = [i for i, token in enumerate(options) if token]  # "" marks a special token
        st.pills("Click a token", clickable, format_func=lambda i: options[i], key=pick, disabled=locked)
    elif form.shape == TYPED_TOKEN:
        choice = st.radio(
            "The next token", [*options, TYPED], index=None, key=pick, disabled=locked, horizontal=True
        )
        if choice == TYPED:
            st.text_input(
                "Your token", key=f"{key}_typed", max_chars=sessions.max_text_chars(50), disabled=locked
            )
    elif form.shape == NUMBER:
        step = (form.high - form.low) / 100
        middle = round((form.low + form.high) / 2, 6)
        st.slider("Your guess", form.low, form.high, middle, step, key=pick, disabled=locked)
    elif form.shape == OPTION:
        st.radio(
            "Your answer",
            range(len(options)),
            index=None,
            format_func=lambda i: options[i],
            key=pick,
            disabled=locked,
        )
    else:
        raise ValueError(f"no answer widget for the answer shape {form.shape!r}")


def ask(question: Question, key: str, options: tuple[str, ...] = ()) -> Any | None:
    """The question and its answer widget; the answer once locked in with the button, else None.

    ``options`` come from ``offered`` (they depend on the model). Answers are plain JSON values: a token
    index (a token to click), a token's text (one to pick or type), a float (a number), an option's index.
    """
    answered = f"{key}_answer"
    st.markdown(f"**Predict:** {question.prompt}")  # the lecture file's own text, not a reader's
    locked = st.session_state.get(answered) is not None
    _answer_widget(question, key, options, locked)
    if not locked:
        st.button(
            "Lock in my answer",
            key=f"{key}_lock",
            disabled=_picked(question, key) is None,
            on_click=_lock,
            args=(question, key),
        )
    return st.session_state.get(answered)


def label(question: Question, answer: Any, options: tuple[str, ...] = ()) -> str:
    """An answer as the reader chose it: an option's or a token's text, a number, a typed token."""
    picked = question.answer_form.shape in (OPTION, TOKEN)  # an index into the options
    if picked and isinstance(answer, int) and 0 <= answer < len(options):
        return options[answer]
    return str(answer)


def reveal(question: Question, found: Truth, model: str, key: str, answer: Any = None) -> bool:
    """The truth beside the reader's answer, and the view that explains it; whether the answer was right."""
    right = is_right(question, answer, found)
    said = "The answer" if not question.asks_model else f"{model} says"
    if answer is None:
        st.info(f"{said}: {found.label}")
    elif right:
        st.success(f"Right. {said}: {found.label}", icon=":material/check:")
    else:
        st.warning(f"Not this time. {said}: {found.label}", icon=":material/close:")
    if question.explain:
        st.caption(question.explain)
    figure = figures.truth_figure(question, found, answer)
    if figure is not None:
        projector.draw(figure, f"{key}_truth")
    return right
