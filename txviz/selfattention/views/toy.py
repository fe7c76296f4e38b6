"""The toy's tabs: one head by hand, several heads (and two trained toys), and shuffled tokens."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from txviz.app import teaching, ui
from txviz.selfattention import equivariance as eq
from txviz.selfattention import figures as figs
from txviz.selfattention import prince, twoheads
from txviz.selfattention import toy as ta
from txviz.selfattention.views import common
from txviz.selfattention.views.common import ToySettings, show_matrix


def one_head(settings: ToySettings) -> None:
    """One head by hand on an editable X: Q, K, V, the scores, softmax and the weighted sum."""
    config, tokens, dims, book = settings.config, settings.tokens, settings.dims, settings.book
    if book:
        st.info(prince.NOTE)
    st.markdown("**Inputs X**: one row per token. Edit any number; blanks are refused.")
    start = pd.DataFrame(settings.book_x if book else ta.toy_input(config), index=tokens, columns=dims)
    key = f"x_{config.n_tokens}_{config.d_model}_{config.seed}_{book}"
    edited = st.data_editor(start, key=key, width="stretch")
    head = settings.book_head if book else ta.toy_heads(config)[0]
    with ui.user_errors():
        result = ta.self_attention_head(edited.to_numpy(), head, settings.scaled)
    cols = st.columns(3)
    for col, name, matrix in zip(cols, "QKV", (result.queries, result.keys, result.values), strict=True):
        with col:
            show_matrix(matrix, tokens, dims, f"{name} = X Ω_{name.lower()}ᵀ + β_{name.lower()}", "token")
    teaching.notice(
        "Q, K and V are three linear maps of the same rows of X: a token asks with its query, is found "
        "by its key and passes on its value, so one head can weigh tokens by one thing and carry "
        "another."
    )
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
    query = st.selectbox(
        "Output of token",
        range(config.n_tokens),
        index=ui.link_index("query", range(config.n_tokens)),
        format_func=lambda i: tokens[i],
        key="query",
    )
    st.markdown(f"**Output {tokens[query]}** = Σₘ a[{tokens[query]}, xₘ] · vₘ")
    st.dataframe(ta.weighted_sum_rows(result, query, tokens), hide_index=True, width="stretch")
    cols = st.columns(2)
    with cols[0]:
        show_matrix(result.output, tokens, dims, "Outputs Sa[X]", "token")
    with cols[1]:
        ui.show_figure(figs.routing_figure(result, tokens), key="routing")


def several_heads(settings: ToySettings) -> None:
    """H heads mixed by Ω_c, then two trained toys: why one head cannot look at two things."""
    common.elsewhere_note(settings)
    tokens, dims, d_model = settings.tokens, settings.dims, settings.config.d_model
    divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
    n_heads = st.select_slider(
        "Heads H (D / H dimensions each)",
        divisors,
        value=ui.link_value("n_heads", divisors[min(1, len(divisors) - 1)], divisors),
        key="n_heads",
    )
    multi_config = ta.ToyConfig(settings.config.n_tokens, d_model, n_heads, settings.config.seed)
    with ui.user_errors():
        multi = ta.multi_head_attention(
            ta.toy_input(multi_config),
            ta.toy_heads(multi_config),
            ta.toy_omega_c(multi_config),
            settings.scaled,
        )
    ui.show_figure(figs.heads_figure(multi, tokens, ui.presenting()), key="heads")
    columns = [f"h{h + 1}·{j + 1}" for h in range(n_heads) for j in range(multi_config.d_head)]
    cols = st.columns(3)
    with cols[0]:
        show_matrix(multi.concatenated, tokens, columns, "Concatenated [Sa₁ | … | Sa_H]", "token")
    with cols[1]:
        show_matrix(multi.omega_c, dims, columns, "Ω_c (W_o in code)", "output", "input")
    with cols[2]:
        show_matrix(multi.output, tokens, dims, "MhSa[X] = [Sa₁ | … | Sa_H] Ω_cᵀ", "token")
    st.caption("The toy input and weights come from the seed; edits on the first tab apply to that tab only.")
    two_trained_toys()


@ui.shared_resource(spinner="Loading the trained heads...")
def two_heads_models():
    return twoheads.load()


def two_trained_toys() -> None:
    """One head and two heads trained on a task that needs two looks, on a held-out sequence."""
    st.subheader("Why several heads: one head cannot look at two things at once")
    st.markdown(twoheads.task_text())
    heads_models, heads_runs = two_heads_models()
    st.dataframe(twoheads.score_rows(heads_runs), hide_index=True)
    held_out = heads_runs["config"]["held_out"]
    index = int(st.number_input("Held-out sequence", 0, held_out - 1, 0, key="two_heads_example"))
    shown = twoheads.example(heads_models, index)
    cols = st.columns(2)
    for col, h in zip(cols, twoheads.HEADS, strict=True):
        with col:
            answer = shown.predicted[h]
            show_matrix(
                shown.weights[h],
                [f"head {i + 1}" for i in range(h)],
                shown.labels,
                f"{h} head{'s' * (h > 1)}: answers {answer[0]}, {answer[1]}",
                "",
                "position",
                kind="sequential",
                zmid=None,
            )
    st.caption(
        f"Right answers: subject {shown.answers[0]}, object {shown.answers[1]}. Held-out: "
        f"{held_out:,} sequences never trained on. Trained by `python -m txviz train two_heads` (seed "
        f"{heads_runs['config']['seed']}, {heads_runs['config']['steps']} steps, one thread, seconds). "
        "If keys also see the symbols, one head can hide which symbol is which in uneven weights and "
        "a wider read-out decodes it: the toy keeps where-to-look and what-to-carry apart so the "
        "limit shown is that of one softmax average read linearly."
    )


def shuffle(settings: ToySettings) -> None:
    """Permutation equivariance, on the toy and on MiniLM."""
    common.elsewhere_note(settings)
    tokens = settings.tokens
    st.markdown(
        "Shuffle the input tokens and every output is shuffled the same way: self-attention is "
        "permutation **equivariant** (not invariant: the outputs move, they do not stay put)."
    )
    st.latex(
        r"\mathrm{Sa}[X_\pi] = \mathrm{Sa}[X]_\pi \quad\text{but}\quad \mathrm{Sa}[X_\pi + P] \neq \mathrm{Sa}[X + P]_\pi"
    )
    shuffle_seed = st.number_input("Shuffle seed (0 reverses)", 0, 10_000, 0, key="shuffle_seed")
    with_positions = st.toggle("Add sinusoidal positions P (by slot)", value=False, key="shuffle_positions")
    with ui.user_errors():
        check = eq.toy_check(
            settings.config,
            eq.seeded_permutation(settings.config.n_tokens, int(shuffle_seed)),
            with_positions,
            settings.scaled,
        )
    shuffled_tokens = [tokens[i] for i in check.permutation]
    st.metric("Toy: largest |Sa[X_π] − Sa[X]_π|", f"{check.max_abs_difference:.1e}")
    st.caption(
        f"Pool the outputs (a mean over the tokens, as a sentence classifier reads them) and the order is "
        f"gone: equivariant layers then pooling are permutation invariant. Pooled, the shuffled and the "
        f"original outputs differ by {check.pooled_difference:.1e}"
        + (" here: positions by slot make the shuffled input another input." if with_positions else ".")
    )
    ui.show_figure(
        figs.equivariance_figure(check.original[check.permutation], check.shuffled, shuffled_tokens),
        key="shuffle_toy",
    )
    st.subheader("The same on MiniLM")
    mode = st.radio(
        "Position ids", list(eq.POSITION_MODES), format_func=eq.POSITION_MODES.get, key="shuffle_mode"
    )
    minilm = ui.load_model("minilm", kinds=("encoder",))
    shuffle_text = ui.text_input("Text to shuffle", "the cat sat on the mat", key="shuffle_text", height=68)
    with ui.user_errors():
        model_check, model_tokens = eq.model_check(minilm, shuffle_text, int(shuffle_seed), mode)
        verdict = "outputs shuffle with the tokens" if model_check.equivariant else "outputs change"
        st.metric(
            "MiniLM last layer: largest |h(shuffled) − h(original)_π|",
            f"{model_check.max_abs_difference:.1e}",
            verdict,
            delta_color="off",
        )
        ui.show_figure(
            figs.equivariance_figure(
                model_check.original[model_check.permutation],
                model_check.shuffled,
                [model_tokens[i] for i in model_check.permutation],
            ),
            key="shuffle_model",
        )
    st.caption(
        "Every position id 0, or each token carrying its own id, and MiniLM (6 layers, LayerNorms, "
        "feed-forwards) is still equivariant up to float32 rounding: only the position embedding "
        "tells it the order. With ids 0, 1, 2, ... by slot the shuffled sentence is a different input."
    )
