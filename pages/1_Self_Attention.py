"""Self-attention step by step: a toy you can edit, several heads, then one real query of a real model."""

import pandas as pd
import streamlit as st

from txviz.app import ui
from txviz.core.tracing import trace_text
from txviz.selfattention import figures as figs
from txviz.selfattention import toy as ta

REAL_MAX_TOKENS = 128  # scores and weights of every head: 30 x 9 x 128 x 128 floats for SmolLM2

ui.setup_page(
    "Self-attention, step by step",
    "Queries, keys and values from the inputs; scores, scaling, softmax and a weighted sum of "
    "values; then several heads mixed by Ω_c; then the same arithmetic on a real model.",
    share=("real_model",),
)

toy_tab, heads_tab, real_tab = st.tabs(
    ["One head, by hand", "Several heads", "On a real model"], key="view", on_change="rerun"
)

with st.sidebar:
    st.subheader("Toy input")
    n_tokens = st.slider("N tokens", 1, 8, 3, key="n_tokens")
    d_model = st.slider("D dimensions", 1, 8, 4, key="d_model")
    seed = st.number_input("Seed", 0, 10_000, 0, key="seed")
    scaled = st.toggle("Divide scores by √d", value=True, key="scaled")

tokens = figs.token_labels(n_tokens)
with ui.user_errors():
    config = ta.ToyConfig(n_tokens, d_model, 1, int(seed))
start = pd.DataFrame(ta.toy_input(config), index=tokens, columns=[f"d{j + 1}" for j in range(d_model)])


@ui.cached(max_entries=16)
def real_trace(loaded, text: str):
    """Every head's weights, scores, queries and keys for a text."""
    return trace_text(loaded, text, max_tokens=REAL_MAX_TOKENS, record=("scores", "queries", "keys"))


def show_matrix(matrix, rows, columns, title, row_title="", column_title="", **kwargs) -> None:
    ui.show_figure(
        figs.matrix_figure(matrix, rows, columns, title, row_title, column_title, **kwargs), key=title
    )


if toy_tab.open:
    with toy_tab:
        st.markdown("**Inputs X**: one row per token. Edit any number; blanks are refused.")
        edited = st.data_editor(start, key=f"x_{n_tokens}_{d_model}_{seed}", width="stretch")
        head = ta.toy_heads(config)[0]
        with ui.user_errors():
            result = ta.self_attention_head(edited.to_numpy(), head, scaled)
        dims = [f"d{j + 1}" for j in range(d_model)]
        cols = st.columns(3)
        for col, name, matrix in zip(cols, "QKV", (result.queries, result.keys, result.values), strict=True):
            with col:
                show_matrix(matrix, tokens, dims, f"{name} = X Ω_{name.lower()}ᵀ + β_{name.lower()}", "token")
        with st.expander("Weights Ω and biases β (q = β_q + Ω_q x, likewise k and v)"):
            cols = st.columns(3)
            for col, name, omega, beta in zip(
                cols,
                "qkv",
                (head.omega_q, head.omega_k, head.omega_v),
                (head.beta_q, head.beta_k, head.beta_v),
                strict=True,
            ):
                with col:
                    show_matrix(omega, dims, dims, f"Ω_{name}", "output", "input")
                    st.caption(f"β_{name} = {ta.vector_text(beta)}")
        cols = st.columns(3)
        with cols[0]:
            show_matrix(result.scores, tokens, tokens, "Scores Q Kᵀ", "query", "key")
        with cols[1]:
            show_matrix(result.scaled_scores, tokens, tokens, f"Scaled: ÷ {result.scale:.3f}", "query", "key")
        with cols[2]:
            ui.show_figure(
                figs.weights_figure(result.weights, tokens, "Softmax of each row", ui.presenting()),
                key="weights",
            )
        st.info(ta.SOFTMAX_AXIS_NOTE)
        st.latex(r"\mathrm{Sa}[X] = \mathrm{Softmax}\!\left[\frac{Q K^\top}{\sqrt{d}}\right] V")
        query = st.selectbox("Output of token", range(n_tokens), format_func=lambda i: tokens[i], key="query")
        st.markdown(f"**Output {tokens[query]}** = Σₘ a[{tokens[query]}, xₘ] · vₘ")
        st.dataframe(ta.weighted_sum_rows(result, query, tokens), hide_index=True, width="stretch")
        cols = st.columns(2)
        with cols[0]:
            show_matrix(result.output, tokens, dims, "Outputs Sa[X]", "token")
        with cols[1]:
            ui.show_figure(figs.routing_figure(result, tokens), key="routing")

if heads_tab.open:
    with heads_tab:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        n_heads = st.select_slider(
            "Heads H (D / H dimensions each)",
            divisors,
            value=divisors[min(1, len(divisors) - 1)],
            key="n_heads",
        )
        multi_config = ta.ToyConfig(n_tokens, d_model, n_heads, int(seed))
        with ui.user_errors():
            multi = ta.multi_head_attention(
                ta.toy_input(multi_config), ta.toy_heads(multi_config), ta.toy_omega_c(multi_config), scaled
            )
        ui.show_figure(figs.heads_figure(multi, tokens, ui.presenting()), key="heads")
        columns = [f"h{h + 1}·{j + 1}" for h in range(n_heads) for j in range(multi_config.d_head)]
        dims = [f"d{j + 1}" for j in range(d_model)]
        cols = st.columns(3)
        with cols[0]:
            show_matrix(multi.concatenated, tokens, columns, "Concatenated [Sa₁ | … | Sa_H]", "token")
        with cols[1]:
            show_matrix(multi.omega_c, dims, columns, "Ω_c (W_o in code)", "output", "input")
        with cols[2]:
            show_matrix(multi.output, tokens, dims, "MhSa[X] = [Sa₁ | … | Sa_H] Ω_cᵀ", "token")
        st.caption(
            "The toy input and weights come from the seed; edits on the first tab apply to that tab only."
        )

if real_tab.open:
    with real_tab:
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
        layer = cols[0].slider("Layer", 0, trace.n_layers - 1, 0, key="real_layer")
        head_index = cols[1].slider("Head", 0, trace.n_heads - 1, 0, key="real_head")
        positions = range(len(trace.query_tokens))
        query_pos = cols[2].selectbox(
            "Query token",
            positions,
            index=min(2, len(positions) - 1),
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
