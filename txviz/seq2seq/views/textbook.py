"""The textbook's two tabs: cross-attention's arithmetic recomputed, and teacher forcing against free running."""

from __future__ import annotations

import streamlit as st

from txviz.app import ui, widgets
from txviz.selfattention import figures as sa_figs
from txviz.selfattention import toy as ta
from txviz.seq2seq import arithmetic, teacher
from txviz.seq2seq import figures as figs
from txviz.seq2seq.views.settings import Settings, decoded, run


@ui.cached(max_entries=16, spinner="Recording cross-attention's queries and keys...")
@ui.heavy
def cross_run(loaded, source: str, method: str, beams: int, steps: int):
    """Cross-attention of the decoded target with queries, keys and scores."""
    return arithmetic.cross_attention_trace(loaded, source, run(loaded, source, method, beams, steps))


@ui.cached(max_entries=16, spinner="Decoding both ways...")
@ui.heavy
def forcing_run(loaded, source: str, reference: str):
    return teacher.compare(loaded, source, reference)


def arithmetic_tab(loaded, settings: Settings) -> None:
    """One target token's cross-attention scores and weights, recomputed from its query and the keys."""
    with ui.user_errors():
        cross = cross_run(loaded, settings.source, settings.method, settings.beams, settings.max_steps)
    cols = st.columns(3)
    x_layer, x_head = widgets.layer_head_picker(
        cross.n_layers, cross.n_heads, ("x_layer", "x_head"), (cross.n_layers - 1, 0), columns=cols[:2]
    )
    target_pos = cols[2].selectbox(
        "Target token (query)",
        range(len(cross.query_tokens)),
        index=ui.link_index("x_query", range(len(cross.query_tokens)), min(1, len(cross.query_tokens) - 1)),
        format_func=lambda i: f"{i}: {cross.query_tokens[i]}",
        key="x_query",
    )
    st.latex(
        r"a_{t,s} = \mathrm{softmax}_s\!\left(\frac{q^{\mathrm{dec}}_t \cdot k^{\mathrm{enc}}_s}{\sqrt{d}}\right)"
    )
    with ui.user_errors():
        x_step = arithmetic.cross_step(cross, x_layer, x_head, target_pos)
    score_gap, weight_gap = arithmetic.largest_gaps(cross)
    title = f"{settings.name}, cross-attention layer {x_layer}, head {x_head}, target {target_pos} ({x_step.query_token})"
    ui.show_figure(
        sa_figs.query_steps_figure(x_step.key_tokens, x_step.scores, x_step.captured_weights, title),
        key="x_steps",
    )
    st.success(
        f"Recomputed here from the captured decoder query and encoder keys: this row's scores within "
        f"{x_step.max_score_difference:.1e} and weights within {x_step.max_weight_difference:.1e} of "
        f"the model's; over every layer, head and target token: scores within {score_gap:.1e}, "
        f"weights within {weight_gap:.1e}."
    )
    st.dataframe(ta.real_step_rows(x_step), hide_index=True, width="stretch")
    st.caption(
        "The query comes from the decoder (the target so far), the keys and values from the "
        "encoder's last layer (the source): the same arithmetic as self-attention, between two "
        "sequences. No mask: every target token may read every source token."
    )


def forcing_tab(loaded, settings: Settings) -> None:
    """The same source decoded reading the reference prefix and reading the model's own outputs."""
    st.markdown(
        "**Teacher forcing** (training): each step reads the *reference* prefix, right or wrong "
        "predictions alike. **Free running** (inference): each step reads the model's *own* "
        "previous outputs. They agree until the model's first mistake; after it, free running "
        "reads a prefix that teacher forcing never showed it."
    )
    name = settings.name
    dates_model = name == "date-bart"
    cols = st.columns(2)
    with cols[0]:
        default = teacher.DEFAULT_SOURCE if dates_model else settings.source
        tf_source = ui.text_input("Source", default, key=f"tf_source_{name}", height=68)
    with cols[1]:
        tf_reference = st.text_input(
            "Reference output",
            teacher.DEFAULT_REFERENCE if dates_model else decoded(loaded, settings).output_text,
            key=f"tf_reference_{name}",
            max_chars=ui.max_text_chars(),
        )
    with ui.user_errors():
        comparison = forcing_run(loaded, tf_source, tf_reference)
    if comparison.notice:
        st.warning(comparison.notice)
    cols = st.columns(3)
    cols[0].metric("Free running writes", comparison.free_text or "(nothing)")
    cols[1].metric("Teacher-forced predictions", comparison.forced_text or "(nothing)")
    cols[2].metric(
        "First step off the reference", "none" if comparison.divergence is None else comparison.divergence
    )
    ui.show_figure(figs.forcing_figure(comparison), key="forcing")
    st.dataframe(teacher.step_rows(comparison), hide_index=True, width="stretch")
    st.caption("Both runs are greedy and use the same weights; only what the decoder reads differs.")
    if dates_model:
        st.caption(
            "date-bart never saw years before 1950, so for 1945 it writes 1955: at the third step it "
            "puts almost no probability on 4. Teacher forcing then feeds it the 4 anyway; free running "
            "feeds it its own 5 (exposure bias: training never showed it its own mistakes)."
        )
