"""The "Start here" path for a first visit: a five-step lecture, each page with Back and Next links."""

from __future__ import annotations

import streamlit as st

from txviz.app import navigation, projector
from txviz.lecture.steps import Lecture, Step

START_HERE = Lecture(
    "start_here",
    "Start here",
    "",
    "",
    tuple(
        Step(page, settings, (what,), title=title).check()
        for page, title, what, settings in (
            ("Self_Attention", "Self-attention", "Queries, keys, softmax and a weighted sum, by hand.", {}),
            (
                "Attention_Explorer",
                "Token focus",
                "A real model on a real sentence: what does the pronoun 'it' look at?",
                {"view": "Token focus"},
            ),
            ("Positional_Encoding", "Positions", "Attention alone ignores order: how positions get in.", {}),
            ("Masking_Patterns", "Masking", "Which tokens may look at which: causal and other masks.", {}),
            ("Live_Generation", "Generation", "A decoder writing one token at a time, attention live.", {}),
        )
    ),
)
STEPS = START_HERE.steps


def page(step: Step) -> st.Page:
    """The st.Page of a step, as the navigation registers it."""
    return navigation.page_of(step.page)


def position(name: str) -> int | None:
    """Where the page sits on the path, or None when it is not on it."""
    return next((i for i, step in enumerate(STEPS) if step.page == name), None)


def step_link(step: Step, label: str, icon: str | None = None, where=st) -> None:
    """A link to a step's page, with its settings (and projector mode, when on)."""
    where.page_link(
        page(step), label=label, icon=icon, query_params=step.query_params() | projector.link_params()
    )


def back_and_next(name: str) -> None:
    """On a page of the path: where it is on the path, and links to the step before and after."""
    i = position(name)
    if i is None:
        return
    back, middle, forward = st.columns([2, 3, 2], vertical_alignment="center")
    if i > 0:
        step_link(STEPS[i - 1], f"Back: {STEPS[i - 1].title}", ":material/arrow_back:", back)
    else:
        back.page_link(navigation.home_page(), label="Back: Home", icon=":material/arrow_back:")
    middle.caption(f"Start here: step {i + 1} of {len(STEPS)}")
    if i + 1 < len(STEPS):
        step_link(STEPS[i + 1], f"Next: {STEPS[i + 1].title}", ":material/arrow_forward:", forward)
    else:
        forward.page_link(navigation.home_page(), label="Done: Home", icon=":material/home:")
