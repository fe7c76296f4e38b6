"""The Encoder Decoder page's settings: decoding in the sidebar, the model's task and the source."""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from txviz.app import ui
from txviz.seq2seq.decoding import decode

KINDS = ("encoder-decoder",)
FALLBACK_SOURCE = "The animal didn't cross the street because it was too tired."


@dataclass(frozen=True)
class Settings:
    """The model's name, how it decodes (greedy or beam), how far, and the source sentence."""

    name: str
    method: str
    beams: int
    max_steps: int
    source: str = ""


def sidebar() -> Settings:
    """The model and the decoding, drawn in the sidebar; the source comes with ``with_source``."""
    with st.sidebar:
        name = ui.model_picker(kinds=KINDS, default="date-bart")
        methods = ["Greedy", "Beam search"]
        label = st.radio(
            "Decoding", methods, index=ui.link_index("method", methods), key="method", horizontal=True
        )
        beams = st.slider(
            "Beams", 2, 8, ui.link_value("beams", 4, range(2, 9)), key="beams", disabled=label == "Greedy"
        )
        max_steps = st.slider(
            "Most steps", 1, 100, ui.link_value("max_steps", 40, range(1, 101)), key="max_steps"
        )
    return Settings(name, "greedy" if label == "Greedy" else "beam", beams, max_steps)


def with_source(loaded, settings: Settings) -> Settings:
    """What the model was trained on, a note on translation models, and the source sentence typed."""
    task = loaded.meta.get("task")
    if task:
        st.caption(f"{settings.name} was trained on: {task}")
        st.caption(f"Held-out exact match: {loaded.meta.get('heldout_exact_match', 'not measured')}")
    with st.expander("With a translation model: does 'it' become 'il' or 'elle'?", expanded=not task):
        st.markdown(
            "Where you have a translation model such as `Helsinki-NLP/opus-mt-en-fr` (choose 'Other' "
            "and type its id or folder), translate *The animal didn't cross the street because it was "
            "too tired.* and then *... because it was too wide.* French must choose **il** for "
            "*l'animal* (masculine) or **elle** for *la rue* (feminine). Move the step slider to the "
            "step that writes the pronoun and see which source tokens its cross-attention reads."
        )
    default = loaded.meta.get("example_source", FALLBACK_SOURCE)
    source = ui.text_input("Source sentence", default, key=f"source_{settings.name}", height=80)
    return replace(settings, source=source)


@ui.cached(max_entries=16, spinner="Decoding...")
@ui.heavy
def run(loaded, source: str, method: str, beams: int, steps: int):
    """The decoding and its attention."""
    return decode(loaded, source, method=method, beams=beams, max_new_tokens=steps)


def decoded(loaded, settings: Settings):
    """The source decoded as the sidebar says (cached: every tab reads the same decoding)."""
    with ui.user_errors():
        return run(loaded, settings.source, settings.method, settings.beams, settings.max_steps)
