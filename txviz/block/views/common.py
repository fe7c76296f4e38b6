"""What every tab of the Transformer Block page shares: the run of the text, the stack and the layer."""

from dataclasses import dataclass

import streamlit as st

from txviz.app import ui, widgets
from txviz.block.recording import BlockRun, read_only, run_text

KINDS = ("encoder", "decoder", "encoder-decoder")
DEFAULT_TEXT = "The cat sat on the mat because it was warm."


@dataclass(frozen=True)
class Settings:
    """The chosen model's name, the text, and the stack and layer the tabs read."""

    name: str
    text: str
    stack: str
    layer: int


@ui.cached(max_entries=8, spinner="Running the model...")
@ui.heavy
def cached_run(loaded, text: str, stages: tuple[str, ...]) -> BlockRun:
    # Shared by every session: arrays locked read-only. The first view asks for no stages.
    return read_only(run_text(loaded, text, frozenset(stages)))


def first_run(loaded, settings: Settings) -> BlockRun:
    """The run without stages that the controls made (a cache hit)."""
    return cached_run(loaded, settings.text, ())


def controls(loaded, name: str, text: str) -> Settings:
    """Run the text, then draw the stack and layer pickers and the run's caption."""
    with ui.user_errors():
        run = cached_run(loaded, text, ())
    if run.notice:
        st.warning(run.notice)
    stack_names = [s.name for s in run.stacks]
    stack_col, layer_col = st.columns(2)
    stack = stack_col.selectbox(
        "Stack",
        stack_names,
        index=stack_names.index(ui.link_value("block_stack", stack_names[0], stack_names)),
        key="block_stack",
        disabled=len(stack_names) == 1,
    )
    data = run.stack(stack)
    layer = widgets.index_picker("Layer", data.n_layers, "block_layer", where=layer_col)
    st.caption(
        f"{name}: {run.layout.family} layout, {run.layout.form} blocks, {len(data.tokens)} {stack} tokens."
    )
    return Settings(name, text, stack, layer)
