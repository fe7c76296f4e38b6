"""The self-attention tabs on a real model: one query's arithmetic, and one head as one matrix (Fig. 12.2)."""

from __future__ import annotations

import streamlit as st

from txviz.app import ui, widgets
from txviz.core.tracing import trace_text
from txviz.selfattention import blockmap
from txviz.selfattention import figures as figs
from txviz.selfattention import toy as ta
from txviz.selfattention.views.common import ToySettings, show_matrix

REAL_MAX_TOKENS = 128  # scores and weights of every head: 30 x 9 x 128 x 128 floats for SmolLM2


@ui.cached(max_entries=16)
@ui.heavy
def real_trace(loaded, text: str):
    """Every head's weights, scores, queries and keys for a text."""
    return trace_text(loaded, text, max_tokens=REAL_MAX_TOKENS, record=("scores", "queries", "keys"))


def on_real_model(_: ToySettings) -> None:
    """One query of a real model's head, recomputed from its captured q and k."""
    name = ui.model_picker(kinds=("encoder", "decoder"), default="minilm", key="real_model")
    loaded = ui.load_model(name, kinds=("encoder", "decoder"))
    text = ui.text_input(
        "Text", "The animal didn't cross the street because it was too tired.", key="real_text"
    )
    with ui.user_errors():
        trace = real_trace(loaded, text)
    if trace.notice:
        st.warning(trace.notice)
    cols = st.columns(3)
    layer, head_index = widgets.layer_head_picker(
        trace.n_layers, trace.n_heads, ("real_layer", "real_head"), columns=cols[:2]
    )
    positions = range(len(trace.query_tokens))
    query_pos = cols[2].selectbox(
        "Query token",
        positions,
        index=ui.link_index("real_query", positions, min(2, len(positions) - 1)),
        key="real_query",
        format_func=lambda i: f"{i}: {trace.query_tokens[i]}",
    )
    with ui.user_errors():
        step = ta.real_query_step(trace, layer, head_index, query_pos)
    title = f"{name}, layer {layer}, head {head_index}, query {query_pos} ({step.query_token})"
    ui.show_figure(
        figs.query_steps_figure(step.key_tokens, step.scores, step.captured_weights, title),
        key="real_steps",
    )
    st.success(
        f"Recomputed here from the captured q and k: scores within {step.max_score_difference:.1e}, "
        f"weights within {step.max_weight_difference:.1e} of the model's. The bars show the captured "
        "weights: the explorer's heatmap row for this query, exactly."
    )
    st.dataframe(ta.real_step_rows(step), hide_index=True, width="stretch")
    with st.expander(f"The query vector and the keys (d_head = {step.query.shape[0]})"):
        dims = [str(j) for j in range(step.query.shape[0])]
        show_matrix(step.query[None, :], [step.query_token], dims, "query q", "", "dimension", height=160)
        show_matrix(step.keys, list(step.key_tokens), dims, "keys k", "key", "dimension")
    if loaded.is_causal:
        st.caption(
            "A decoder: keys after the query are masked (−∞ before softmax, weight 0). "
            "Queries and keys here already carry RoPE's rotation."
        )
    st.caption("Attention weights show where information flows, not why the model decides.")


@ui.cached(max_entries=8)
@ui.heavy
def head_matrices(loaded, text: str, layer: int, head: int):
    """One MiniLM head's inputs, value weights, attention and output, and the block-matrix check."""
    matrices = blockmap.minilm_head_matrices(loaded, text, layer, head)
    return matrices, blockmap.check(matrices)


def as_one_matrix(_: ToySettings) -> None:
    """Prince's Fig. 12.2 on MiniLM's head: the values and the attention as block matrices."""
    st.markdown(
        "Prince's Fig. 12.2 (b, c) on MiniLM's real head: stack the N inputs into one N·D vector. "
        "The values are a block-diagonal map of it, the same Ω_v in every diagonal block; the "
        "attention is then one N·D_h x N·D_h matrix on the stacked values whose block (i, j) is "
        "a_ij times the identity. Together: block (i, j) of the whole map is a_ij Ω_v."
    )
    st.latex(
        r"\operatorname{vec}(O) = (A \otimes I_{D_h})\big[(I_N \otimes \Omega_v)\operatorname{vec}(X) + 1_N \otimes \beta_v\big] = (A \otimes \Omega_v)\operatorname{vec}(X) + (A\,1_N) \otimes \beta_v"
    )
    loaded = ui.load_model("minilm", kinds=("encoder",))
    text = ui.text_input("Text (first 12 tokens)", "The cat sat on the mat.", key="bm_text", height=68)
    cols = st.columns(3)
    layer, head_index = widgets.layer_head_picker(
        loaded.n_layers, loaded.n_heads, ("bm_layer", "bm_head"), columns=cols[:2]
    )
    shown = cols[2].slider("Dimensions drawn per block", 1, 8, 3, key="bm_dims")
    with ui.user_errors():
        matrices, numbers = head_matrices(loaded, text, layer, head_index)
    if matrices.notice:
        st.warning(matrices.notice)
    n, d_head = matrices.output.shape
    cols = st.columns(3)
    cols[0].metric("Largest |map(X) − MiniLM's head output|", f"{numbers.max_abs_difference:.1e}")
    cols[1].metric("Largest |A(2X) − A(X)|", f"{numbers.doubled_weights_change:.2f}")
    cols[2].metric("Output change from the weights alone at 2X", f"{numbers.doubled_output_gap:.0%}")
    tokens = matrices.tokens
    labels = blockmap.stacked_labels(tokens, shown)
    stacked = [
        (blockmap.value_map(matrices.omega_v[:shown, :shown], n), "stacked values", "stacked inputs",
         f"(b) values: I ⊗ Ω_v, first {shown} x {shown} of each {d_head} x {matrices.inputs.shape[1]} block", {}),
        (blockmap.mixing_map(matrices.weights, shown), "stacked outputs", "stacked values",
         f"(c) attention: A ⊗ I, first {shown} of each block's {d_head} dimensions",
         {"kind": "sequential", "zmid": None}),
    ]  # fmt: skip
    for column, (matrix, row_title, column_title, title, colours) in zip(st.columns(2), stacked, strict=True):
        figure = figs.matrix_figure(matrix, labels, labels, title, row_title, column_title, **colours)
        with column:  # long stacked labels go below, clear of the title
            ui.show_figure(figure.update_xaxes(side="bottom"), key=title[:3])
    st.caption(
        f"The full matrices are {n * d_head} x {n * matrices.inputs.shape[1]} (b) and "
        f"{n * d_head} x {n * d_head} (c), built here with np.kron from layer {layer}'s query, key and value "
        f"weights and the captured weights; applied to the stacked input they give MiniLM's own head "
        f"output to {numbers.max_abs_difference:.0e} (the single matrix A ⊗ Ω_v: "
        f"{numbers.whole_map_difference:.0e}; softmax(q kᵀ/√d) from the weights matches the captured "
        f"A to {numbers.recomputed_weights_difference:.0e}). The output is linear in the values for a "
        "fixed A, but A is a softmax of the inputs: double X and the weights move by up to "
        f"{numbers.doubled_weights_change:.2f}, so the layer is not a linear map of X."
    )
