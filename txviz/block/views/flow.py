"""The Transformer Block page's tabs on one forward pass: the data flow, and one block run as code."""

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.block import dataflow, figures
from txviz.block.opened import FORM_NOTES, open_block
from txviz.block.views.common import Settings, cached_run, first_run


@ui.cached(max_entries=8, spinner="Running the block as code...")
@ui.heavy
def cached_block(loaded, text: str, stack: str, layer: int):
    return open_block(loaded, cached_run(loaded, text, ()), stack, layer)


def data_flow(loaded, settings: Settings) -> None:
    """The diagram of one forward pass, and the values of the chosen box."""
    run = first_run(loaded, settings)
    boxes = dataflow.stages(run, settings.stack)
    labels = {box.key: box.label.replace("\n", " ") for box in boxes}
    keys = list(labels)
    chosen = st.selectbox(
        "Stage (a box of the diagram)",
        keys,
        index=keys.index(ui.link_value("block_stage", "embedding", keys)),
        format_func=labels.get,
        key="block_stage",
    )
    ui.show_figure(figures.data_flow(boxes, chosen, f"{settings.name}: one forward pass"), key="flow")
    teaching.notice(
        "every attention and MLP box adds its output to the residual stream rather than replacing it; "
        "the Logit lens tab reads that stream after each layer as if the model stopped there."
    )
    st.caption(next(box.detail for box in boxes if box.key == chosen))
    values = dataflow.stage_values(loaded, run, settings.stack, chosen, settings.layer)
    ui.show_figure(figures.stage_figure(values, run.stack(settings.stack).tokens), key="stage")


def one_block(loaded, settings: Settings) -> None:
    """The chosen block as code, each intermediate checked against the model's own output."""
    run = first_run(loaded, settings)
    stack = settings.stack
    with ui.user_errors():
        opened = cached_block(loaded, settings.text, stack, settings.layer)
    st.code("\n".join(opened.lines), language=None)
    st.caption(FORM_NOTES[opened.form])
    if opened.note:
        st.caption(opened.note)
    a, b = st.columns(2)
    a.metric(f"max |{opened.steps[-1].name} − model's own layer output|", f"{opened.max_difference:.2e}")
    b.metric("largest |value| of that output", f"{opened.scale:.3g}")
    n_heads = max(s.value.shape[0] for s in opened.steps if s.axes[0] == "head")
    head = widgets.index_picker("Head (for the per-head arrays)", n_heads, "block_head")
    ui.show_figure(figures.steps_overview(opened.steps, head), key="steps")
    names = [s.name for s in opened.steps]
    step_name = st.selectbox(
        "Open one intermediate", names, key="block_step",
        index=ui.link_index("block_step", names, len(names) - 1),
        format_func=lambda n: f"{n}  {opened.step(n).shape}",
    )  # fmt: skip
    step = opened.step(step_name)
    st.code(step.code, language=None)
    memory = run.stack("encoder").tokens if stack == "decoder" and len(run.stacks) > 1 else None
    tokens = run.stack(stack).tokens
    ui.show_figure(
        figures.step_figure(step, tokens, head, memory, n_heads, presenting=ui.presenting()),
        key="step",
    )
    st.dataframe(
        {
            "step": names,
            "code": [s.code for s in opened.steps],
            "shape": [str(s.shape) for s in opened.steps],
        },
        hide_index=True,
    )
