"""The "Start here" path for a first visit: five pages in order, each with Back and Next links."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import streamlit as st

from txviz import page_map
from txviz.app import navigation, projector


@dataclass(frozen=True)
class Step:
    """One stop on the path: a page (its name in the page map), what to look at there, and the link's settings."""

    page: str
    label: str
    what: str
    settings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        refusal = page_map.page(self.page).refusal(self.settings)  # an unknown page raises UnknownPage
        if refusal:
            raise ValueError(f"the Start here step {self.label!r}: {refusal}")

    def query_params(self) -> dict[str, str]:
        """The settings as link parameters (JSON-encoded, as ui.link_value reads them)."""
        return {key: json.dumps(value) for key, value in self.settings.items()} | projector.link_params()


STEPS = (
    Step("Self_Attention", "Self-attention", "Queries, keys, softmax and a weighted sum, by hand."),
    Step(
        "Attention_Explorer",
        "Token focus",
        "A real model on a real sentence: what does the pronoun 'it' look at?",
        {"view": "Token focus"},
    ),
    Step("Positional_Encoding", "Positions", "Attention alone ignores order: how positions get in."),
    Step("Masking_Patterns", "Masking", "Which tokens may look at which: causal and other masks."),
    Step("Live_Generation", "Generation", "A decoder writing one token at a time, attention live."),
)


def page(step: Step) -> st.Page:
    """The st.Page of a step, as the navigation registers it."""
    return navigation.page_of(step.page)


def position(name: str) -> int | None:
    """Where the page sits on the path, or None when it is not on it."""
    return next((i for i, step in enumerate(STEPS) if step.page == name), None)


def step_link(step: Step, label: str, icon: str | None = None, where=st) -> None:
    """A link to a step's page, with its settings (and projector mode, when on)."""
    where.page_link(page(step), label=label, icon=icon, query_params=step.query_params())


def back_and_next(name: str) -> None:
    """On a page of the path: where it is on the path, and links to the step before and after."""
    i = position(name)
    if i is None:
        return
    back, middle, forward = st.columns([2, 3, 2], vertical_alignment="center")
    if i > 0:
        step_link(STEPS[i - 1], f"Back: {STEPS[i - 1].label}", ":material/arrow_back:", back)
    else:
        back.page_link(navigation.home_page(), label="Back: Home", icon=":material/arrow_back:")
    middle.caption(f"Start here: step {i + 1} of {len(STEPS)}")
    if i + 1 < len(STEPS):
        step_link(STEPS[i + 1], f"Next: {STEPS[i + 1].label}", ":material/arrow_forward:", forward)
    else:
        forward.page_link(navigation.home_page(), label="Done: Home", icon=":material/home:")
