"""The Transformer Block page's logit lens tab: every layer's stream read by the output head."""

import streamlit as st

from txviz import models
from txviz.app import sessions, ui
from txviz.block import figures, lens
from txviz.block.views.common import Settings, cached_run, first_run

LENS_MODEL = "smollm2"  # the decoder the lens tab offers when the chosen model has no lens
LENS_POSITIONS = 40  # the lens grid shows the last positions: every cell is a full vocabulary softmax


@ui.cached(max_entries=4, spinner="Reading every layer with the output head...")
@ui.heavy
def cached_lens(loaded, text: str):
    run = cached_run(loaded, text, ())
    return lens.logit_lens(loaded, run, slice(-LENS_POSITIONS, None))


def use_model(model: str) -> None:
    """Runs before the next run draws the picker, so the picker may still be set."""
    st.session_state["model"] = model


def offer_lens_model(error: lens.NoLensError, name: str) -> None:
    """Say why the chosen model has no lens, with a button that switches to a decoder that has one."""
    decoders = [n for n in sessions.offered_models(models.names(("decoder",))) if n != name]
    st.info(str(error))
    if decoders:
        target = LENS_MODEL if LENS_MODEL in decoders else decoders[0]
        st.button(f"Switch to {target}", key="block_lens_switch", on_click=use_model, args=(target,))


def logit_lens(loaded, settings: Settings) -> None:
    """The top token of every layer's stream at the last positions, and one position's probabilities."""
    try:
        lens.check_lens(loaded)
    except lens.NoLensError as error:
        offer_lens_model(error, settings.name)
        return  # the lens tab is the open one and the page's last element: nothing else is drawn
    with ui.user_errors():
        result = cached_lens(loaded, settings.text)
    if len(first_run(loaded, settings).stack("decoder").tokens) > LENS_POSITIONS:
        st.caption(f"The grid shows the last {LENS_POSITIONS} positions.")
    ui.show_figure(figures.lens_grid(result, presenting=ui.presenting()), key="lens_grid")
    options = list(range(len(result.tokens)))
    position = st.selectbox(
        "Position", options, index=len(options) - 1, key="block_lens_position",
        format_func=lambda i: f"{i}: {result.tokens[i]}",
    )  # fmt: skip
    final_token = result.top_tokens[-1][position]
    ui.show_figure(figures.lens_position(result, position, final_token), key="lens_position")
    st.caption(
        "The last row equals the model's own prediction: the same final norm and head, the same input."
    )
