"""Decoding step by step: each step's attention, its candidates and beams, and its source attribution."""

from __future__ import annotations

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.explain import figures as explain_figs
from txviz.explain.methods import METHODS
from txviz.explain.seq2seq import attribute_source
from txviz.seq2seq import figures as figs
from txviz.seq2seq.views.settings import Settings, decoded, run

KIND_LABELS = {
    "Cross-attention (target → source)": "cross",
    "Decoder masked self-attention": "decoder",
    "Encoder self-attention": "encoder",
}


@ui.cached(max_entries=32, spinner="Attributing the step to the source...")
@ui.heavy
def source_attribution(loaded, source: str, method: str, beams: int, steps: int, step: int, attribution: str):
    """One decoding step's attribution to the source tokens, beside its cross-attention."""
    return attribute_source(loaded, source, run(loaded, source, method, beams, steps), step, attribution)


def decoding_tab(loaded, settings: Settings) -> None:
    """The output, then one step's attention of the chosen kind, its probabilities and its beams."""
    trace = decoded(loaded, settings)
    st.markdown(f"**Output** ({trace.method}, {len(trace.steps)} steps):")
    st.code(trace.output_text or "(nothing but the end token)", language=None)
    if not trace.finished:
        st.info(f"No end token within {settings.max_steps} steps: raise 'Most steps' to let it finish.")

    last = len(trace.steps) - 1
    step = (
        st.slider("Step", 0, last, ui.link_value("step", last, range(last + 1)), key="step")
        if last > 0
        else 0
    )
    kind = KIND_LABELS[
        st.radio(
            "Attention",
            list(KIND_LABELS),
            index=ui.link_index("kind", list(KIND_LABELS)),
            key="kind",
            horizontal=True,
        )
    ]
    part = {"cross": trace.cross, "decoder": trace.decoder, "encoder": trace.encoder}[kind]
    layer, head = widgets.layer_head_picker(
        part.n_layers, part.n_heads, (f"layer_{kind}", f"head_{kind}"), (part.n_layers - 1, 0)
    )

    ui.show_figure(
        figs.step_attention(trace, step, min(layer, trace.cross.n_layers - 1), head), key="step_view"
    )
    teaching.notice(
        "each row is one decoding step: its cross-attention shows which source tokens the decoder read "
        "while choosing that token, often the ones it is copying or translating."
    )
    ui.show_figure(figs.attention_head(trace, kind, layer, head, step, ui.presenting()), key="head_view")
    st.caption(
        "Rows are queries: a row 'a → b' is the step whose query is target token a and which chose b. "
        "Rows after the chosen step are hidden; the decoder's future positions are masked (blank)."
    )

    col_probs, col_alts = st.columns(2)
    with col_probs:
        ui.show_figure(figs.chosen_probabilities(trace, step), key="probs")
    with col_alts:
        ui.show_figure(figs.step_alternatives(trace.steps[step]), key="alternatives")
    if trace.steps[step].beams:
        st.markdown(f"**Beams kept after step {step}** (summed log-probability):")
        st.dataframe(
            [
                {"hypothesis": text, "log-probability": round(score, 4)}
                for text, score in trace.steps[step].beams
            ],
            width="stretch",
        )

    if st.toggle("Why this token? Attribution to the source", key="explain_source"):
        why_this_token(loaded, settings, step)

    with st.expander("Every layer and head of this attention kind"):
        ui.show_figure(figs.all_heads(trace, kind, step, ui.presenting()), key="mosaic")

    st.caption(
        "Attention weights show where each step read from, not why it chose its token: they are one "
        "signal among many (values, feed-forward layers and residuals also carry information)."
    )


def why_this_token(loaded, settings: Settings, step: int) -> None:
    """The step's attribution to each source token, by the method chosen here."""
    explain_method = st.radio(
        "Attribution", list(METHODS), format_func=METHODS.get, key="explain_method", horizontal=True
    )
    with ui.user_errors():
        s = settings
        explained = source_attribution(loaded, s.source, s.method, s.beams, s.max_steps, step, explain_method)
    ui.show_figure(
        explain_figs.source_attribution_figure(explained, METHODS[explain_method]), key="explain_source_fig"
    )
    st.caption(
        "Does the step depend on the source tokens its cross-attention reads? Attribution is a share of "
        "its total magnitude (negative: that token lowers the chosen token's log-probability)."
    )
