"""Self-attention step by step: a toy you can edit, several heads, then one real query of a real model."""

import pandas as pd
import streamlit as st

from txviz import page_map
from txviz.app import navigation, projector, teaching, ui, widgets
from txviz.core.tracing import trace_text
from txviz.selfattention import additive, blockmap, efficient, linear, prince, twoheads
from txviz.selfattention import equivariance as eq
from txviz.selfattention import figures as figs
from txviz.selfattention import toy as ta

REAL_MAX_TOKENS = 128  # scores and weights of every head: 30 x 9 x 128 x 128 floats for SmolLM2

ui.setup_page(
    "Self_Attention",
    "Queries, keys and values from the inputs; scores, scaling, softmax and a weighted sum of "
    "values; then several heads mixed by Ω_c; then the same arithmetic on a real model.",
)
# In projector mode the Q, K and V row stays under the inputs X it is computed from: in view at 1280 x 720.
projector.close_stage()

VIEWS = [
    "One head, by hand",
    "Several heads",
    "On a real model",
    "Shuffle the tokens",
    "Additive (Bahdanau)",
    "Linear attention",
    "As one matrix (Fig. 12.2)",
]
toy_tab, heads_tab, real_tab, shuffle_tab, additive_tab, linear_tab, matrix_tab = st.tabs(
    VIEWS, key="view", on_change="rerun", default=ui.link_tab("view", VIEWS)
)

with st.sidebar:
    st.subheader("Toy input")
    book = st.toggle("Prince's Fig. 12.1 (first tab)", value=ui.link_value("fig_12_1", False), key="fig_12_1")
    n_tokens = st.slider(
        "N tokens", 1, 8, ui.link_value("n_tokens", 3, range(1, 9)), key="n_tokens", disabled=book
    )
    d_model = st.slider(
        "D dimensions", 1, 8, ui.link_value("d_model", 4, range(1, 9)), key="d_model", disabled=book
    )
    seed = st.number_input(
        "Seed", 0, 10_000, ui.link_value("seed", 0, range(10_001)), key="seed", disabled=book
    )
    scaled = st.toggle("Divide scores by √d", value=ui.link_value("scaled", True), key="scaled")
if book:  # the book's own numbers: three tokens, weights solved for its attention
    book_x, book_head = prince.figure_12_1(scaled)
    n_tokens, d_model, seed = prince.CONFIG.n_tokens, prince.CONFIG.d_model, prince.CONFIG.seed

tokens = figs.token_labels(n_tokens)
with ui.user_errors():
    config = ta.ToyConfig(n_tokens, d_model, 1, int(seed))
start = pd.DataFrame(
    book_x if book else ta.toy_input(config), index=tokens, columns=[f"d{j + 1}" for j in range(d_model)]
)


@ui.cached(max_entries=16)
@ui.heavy
def real_trace(loaded, text: str):
    """Every head's weights, scores, queries and keys for a text."""
    return trace_text(loaded, text, max_tokens=REAL_MAX_TOKENS, record=("scores", "queries", "keys"))


def show_matrix(matrix, rows, columns, title, row_title="", column_title="", **kwargs) -> None:
    ui.show_figure(
        figs.matrix_figure(matrix, rows, columns, title, row_title, column_title, **kwargs), key=title
    )


if toy_tab.open:
    with toy_tab:
        if book:
            st.info(prince.NOTE)
        st.markdown("**Inputs X**: one row per token. Edit any number; blanks are refused.")
        edited = st.data_editor(start, key=f"x_{n_tokens}_{d_model}_{seed}_{book}", width="stretch")
        head = book_head if book else ta.toy_heads(config)[0]
        with ui.user_errors():
            result = ta.self_attention_head(edited.to_numpy(), head, scaled)
        dims = [f"d{j + 1}" for j in range(d_model)]
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
            range(n_tokens),
            index=ui.link_index("query", range(n_tokens)),
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


@ui.shared_resource(spinner="Loading the trained heads...")
def two_heads_models():
    return twoheads.load()


if heads_tab.open:
    with heads_tab:
        if book:  # the preset's solved head belongs to the first tab
            st.caption(prince.ELSEWHERE)
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        n_heads = st.select_slider(
            "Heads H (D / H dimensions each)",
            divisors,
            value=ui.link_value("n_heads", divisors[min(1, len(divisors) - 1)], divisors),
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

if shuffle_tab.open:
    with shuffle_tab:
        if book:  # the preset's solved head belongs to the first tab
            st.caption(prince.ELSEWHERE)
        st.markdown(
            "Shuffle the input tokens and every output is shuffled the same way: self-attention is "
            "permutation **equivariant** (not invariant: the outputs move, they do not stay put)."
        )
        st.latex(
            r"\mathrm{Sa}[X_\pi] = \mathrm{Sa}[X]_\pi \quad\text{but}\quad \mathrm{Sa}[X_\pi + P] \neq \mathrm{Sa}[X + P]_\pi"
        )
        shuffle_seed = st.number_input("Shuffle seed (0 reverses)", 0, 10_000, 0, key="shuffle_seed")
        with_positions = st.toggle(
            "Add sinusoidal positions P (by slot)", value=False, key="shuffle_positions"
        )
        with ui.user_errors():
            check = eq.toy_check(
                ta.ToyConfig(n_tokens, d_model, 1, int(seed)),
                eq.seeded_permutation(n_tokens, int(shuffle_seed)),
                with_positions,
                scaled,
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
        shuffle_text = ui.text_input(
            "Text to shuffle", "the cat sat on the mat", key="shuffle_text", height=68
        )
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

if additive_tab.open:
    with additive_tab:
        if book:  # the preset's solved head belongs to the first tab
            st.caption(prince.ELSEWHERE)
        st.markdown(
            "Bahdanau et al. (2015) scored a query against a key with a small feed-forward net instead "
            "of a dot product. Same Q, K and V as the first tab (from the seed), two ways to score them:"
        )
        st.latex(
            r"\text{additive: } s_{nm} = w^\top \tanh(W q_n + U k_m) \qquad \text{dot-product: } s_{nm} = \frac{q_n \cdot k_m}{\sqrt{d}}"
        )
        hidden_size = st.slider(
            "Hidden units h of the scoring net", 1, additive.MAX_HIDDEN, 8, key="additive_h"
        )
        with ui.user_errors():
            dot_head = ta.self_attention_head(ta.toy_input(config), ta.toy_heads(config)[0], scaled)
            additive_weights = additive.seeded_weights(config.d_head, hidden_size, int(seed))
            compared = additive.additive_attention(dot_head, additive_weights)
        cols = st.columns(2)
        with cols[0]:
            ui.show_figure(
                figs.weights_figure(compared.weights, tokens, "Additive: softmax(w·tanh(Wq + Uk))"),
                key="additive_weights",
            )
        with cols[1]:
            ui.show_figure(
                figs.weights_figure(compared.dot_weights, tokens, "Dot-product: softmax(q·k/√d)"),
                key="dot_weights",
            )
        additive_query = st.selectbox(
            "Scores of query", range(n_tokens), format_func=lambda i: tokens[i], key="additive_query"
        )
        st.dataframe(
            additive.score_rows(compared, dot_head, additive_query, tokens), hide_index=True, width="stretch"
        )
        with st.expander(f"W and U (h x d = {hidden_size} x {config.d_head}) and w"):
            dims = [f"d{j + 1}" for j in range(config.d_head)]
            units = [f"u{j + 1}" for j in range(hidden_size)]
            cols = st.columns(2)
            with cols[0]:
                show_matrix(additive_weights.w_query, units, dims, "W (applied to q)", "unit", "input")
            with cols[1]:
                show_matrix(additive_weights.w_key, units, dims, "U (applied to k)", "unit", "input")
            st.caption(f"w = {ta.vector_text(additive_weights.w_out)}")
        st.caption(
            "The additive score costs an h-unit net per query-key pair, N x N x h; the dot product is one "
            "matrix product, which is why transformers use it (with √d keeping the scores in softmax's range)."
        )


@ui.cached(max_entries=16, spinner="Running MiniLM...")
@ui.heavy
def linear_head(loaded, text: str, layer: int, head: int):
    """One MiniLM head's q, k, v and weights (the model is always MiniLM here)."""
    return linear.minilm_head(loaded, text, layer, head)


@ui.cached(max_entries=16, spinner="Linformer and Performer on this head...")
@ui.heavy
def efficient_numbers(loaded, text: str, layer: int, head: int, kp: int, kind: str, features: int):
    """Linformer, Performer and elu + 1 on one MiniLM head, and their error curves."""
    qkv = linear.minilm_head(loaded, text, layer, head)
    return efficient.versus_softmax(qkv, kp, kind, features)


if linear_tab.open:
    with linear_tab:
        st.markdown(
            "Replace exp(q·k/√d) by φ(q)·φ(k) with φ(x) = elu(x) + 1 and the sum over keys factors: "
            "Σₘ φ(q)·φ(kₘ) vₘ = φ(q) (Σₘ φ(kₘ) vₘᵀ). The d × d sum is built once, so the cost grows "
            "like n, not n² (Katharopoulos et al., 2020)."
        )
        st.latex(
            r"\text{out}_i = \frac{\phi(q_i)^\top \sum_m \phi(k_m) v_m^\top}{\phi(q_i)^\top \sum_m \phi(k_m)}"
            r"\qquad S_i = S_{i-1} + \phi(k_i) v_i^\top,\; z_i = z_{i-1} + \phi(k_i)"
        )
        minilm = ui.load_model("minilm", kinds=("encoder",))
        linear_text = ui.text_input(
            "Text",
            "The animal didn't cross the street because it was too tired.",
            key="linear_text",
            height=68,
        )
        linear_layer, linear_head_index = widgets.layer_head_picker(
            minilm.n_layers,
            minilm.n_heads,
            ("linear_layer", "linear_head"),
            (2, 3),
            labels=("MiniLM layer", "MiniLM head"),
        )
        with ui.user_errors():
            qkv = linear_head(minilm, linear_text, linear_layer, linear_head_index)
        if qkv.notice:
            st.warning(qkv.notice)
        result = linear.compare(qkv)
        cols = st.columns(4)
        cols[0].metric("Weights apart (mean total variation)", f"{result.weight_distance:.3f}")
        cols[1].metric("Output error ‖O_lin − O_soft‖ / ‖O_soft‖", f"{result.output_error:.3f}")
        cols[2].metric("O(n) form vs n × n form", f"{result.fast_vs_matrix:.1e}")
        cols[3].metric("Recurrent vs parallel (causal)", f"{result.recurrent_vs_parallel:.1e}")
        labels = list(qkv.tokens)  # raw: the figure escapes them
        cols = st.columns(2)
        with cols[0]:
            ui.show_figure(
                figs.weights_figure(result.softmax, labels, "Softmax: MiniLM's own weights"),
                key="linear_soft",
            )
        with cols[1]:
            ui.show_figure(
                figs.weights_figure(result.linear, labels, "Linear: φ(q)·φ(k), normalised"), key="linear_lin"
            )
        st.caption(
            f"q and k are MiniLM's captured ones (softmax recomputed from them matches its weights within "
            f"{result.recomputed_vs_captured:.0e}); v comes from the layer's value projection. MiniLM was "
            "trained with softmax: the linear weights are flatter (φ is not exp), which is the error above. "
            "A model trained with linear attention learns q and k that suit it."
        )
        st.subheader("Cost against n")
        if st.button("Measure on this machine (256 to 2,048 tokens, d = 64)", key="linear_measure"):
            with st.spinner("Timing both..."):
                st.session_state["linear_timings"] = linear.time_both((256, 512, 1024, 2048), repeats=3)
        timings = st.session_state.get("linear_timings")
        if timings:
            ns = [t.n for t in timings]
            ui.show_figure(
                figs.linear_cost_figure(ns, [t.softmax_s for t in timings], [t.linear_s for t in timings]),
                key="linear_cost",
            )
            st.dataframe(
                [
                    {
                        "n": t.n,
                        "softmax ms": t.softmax_s * 1e3,
                        "linear ms": t.linear_s * 1e3,
                        "ratio": t.ratio,
                    }
                    for t in timings
                ],
                hide_index=True,
            )
        st.caption("Full table: `python -m txviz bench linear` (ratios of softmax to linear time, one run).")

        st.subheader("Low rank (Linformer) and random features (Performer), on the same head")
        st.markdown(
            "**Linformer** (Wang et al. 2020) projects the n keys and values to kp rows with a kp × n matrix "
            "E: softmax(q (E K)ᵀ/√d) (E V), O(n kp d). **Performer** (Choromanski et al. 2021, FAVOR+) "
            "estimates exp(q·k/√d) by φ(q)·φ(k) with m positive random features "
            "φ(x) = exp(w·x − |x|²/2)/√m, w Gaussian and orthogonal in blocks: unbiased, and closer as m "
            "grows. Like elu + 1, both factor the sum over keys, so the n × n matrix is never built."
        )
        cols = st.columns(3)
        n_tokens_here = len(qkv.tokens)
        kp = cols[0].slider("Linformer kp", 1, n_tokens_here, max(1, n_tokens_here // 2), key="linformer_kp")
        kind = cols[1].selectbox("Projection E", efficient.PROJECTIONS, key="linformer_projection")
        features = cols[2].select_slider(
            "Performer features m", efficient.FEATURE_COUNTS, 64, key="performer_m"
        )
        versus = efficient_numbers(minilm, linear_text, linear_layer, linear_head_index, kp, kind, features)
        cols = st.columns(3)
        cols[0].metric("Linformer output error", f"{versus.comparison.linformer_error:.3f}")
        cols[1].metric("Performer output error", f"{versus.comparison.performer_error:.3f}")
        cols[2].metric("elu + 1 output error", f"{versus.comparison.elu_error:.3f}")
        cols = st.columns(2)
        with cols[0]:
            ui.show_figure(
                figs.weights_figure(result.softmax, labels, "Softmax: MiniLM's own weights"),
                key="efficient_soft",
            )
        with cols[1]:
            ui.show_figure(
                figs.weights_figure(
                    versus.comparison.performer_weights, labels, f"Performer estimate, m = {features}"
                ),
                key="efficient_performer",
            )
        ui.show_figure(
            figs.efficient_error_figure(versus.curves, versus.comparison.elu_error), key="efficient_curves"
        )
        st.caption(
            "Same q, k, v as above (MiniLM's captured queries and keys). Linformer learns E while it trains; "
            "here E is fixed, a random Gaussian N(0, 1/kp) (averaged over 5 draws) or the mean of kp "
            "contiguous segments (at kp = n the identity: exactly softmax). A random E mixes values MiniLM "
            "never meant to mix, so its error is large. Performer's curves are averaged over 5 draws of the "
            "features."
        )
        calm = versus.calm_temperature
        cols = st.columns(4)
        cols[0].metric("This head: max |q + k|²/√d", f"{versus.spread:.2f}")
        cols[1].metric("One feature's relative variance", f"{efficient.feature_variance(versus.spread):.2e}")
        cols[2].metric(f"Cooled (q, k / √{calm}): max |q + k|²/√d", f"{versus.calm_spread:.2f}")
        cols[3].metric(
            "Cooled: one feature's variance", f"{efficient.feature_variance(versus.calm_spread):.2e}"
        )
        why = (
            "One positive random feature estimates exp(q·k/√d) with relative variance exp(|q + k|²/√d) − 1 "
            "(Choromanski et al. 2021, Lemma 2), and |q + k|² = |q|² + |k|² + 2 q·k: it grows exponentially "
            "with the lengths of the queries and keys. m features divide it by m, so the error falls like "
            "√((exp(|q + k|²/√d) − 1)/m)."
        )
        if calm == 1:
            st.markdown(
                f"**Why Performer converges on this head.** {why} This head's queries and keys are short "
                f"(max |q + k|²/√d = {versus.spread:.1f}), so a few thousand features are enough."
            )
        else:
            needed = 100 * efficient.feature_variance(versus.spread)
            st.markdown(
                f"**Why Performer fails on this head and converges on the cooled one.** {why} MiniLM's trained "
                f"queries and keys are long: for a 10% error on its worst pair this head would need about "
                f"m = 100 (e^{versus.spread:.1f} − 1) ≈ {needed:.0e} features, far beyond any m here, so its "
                f"curve barely moves. Divide q and k by √{calm} (softmax at temperature T = {calm}, a flatter "
                f"map) and every pair stays below |q + k|²/√d = {versus.calm_spread:.1f}: that curve falls "
                "towards zero as m grows, measured against softmax at the same temperature. Performer works "
                "where a model learns short queries and keys, which is why it is trained with its features, "
                "not bolted onto a model trained with softmax."
            )

        st.subheader("Where each family of efficient transformers is shown (probml fig. 15.29)")
        titles = {
            family_page: page_map.page(family_page).title
            for family in efficient.FAMILIES
            for family_page, _ in family.shown
        }
        ui.show_figure(figs.families_figure(efficient.FAMILIES, titles), key="efficient_families")
        for family in efficient.FAMILIES:
            st.markdown(f"**{family.name}**: {family.idea}. {family.members}.")
            if family.note:
                st.markdown(family.note)
            for family_page, what in family.shown:
                st.page_link(
                    navigation.page_of(family_page),
                    label=f"{titles[family_page]}: {what}",
                    icon=":material/open_in_new:",
                )
        st.caption(
            "Not shown in txviz: Reformer's hashing and the Routing Transformer's clustering (the learnable "
            "patterns that do save), Transformer-XL's segment memory and the Set Transformer's inducing "
            "points; the links go to the nearest idea txviz draws."
        )


@ui.cached(max_entries=8)
@ui.heavy
def head_matrices(loaded, text: str, layer: int, head: int):
    """One MiniLM head's inputs, value weights, attention and output, and the block-matrix check."""
    matrices = blockmap.minilm_head_matrices(loaded, text, layer, head)
    return matrices, blockmap.check(matrices)


if matrix_tab.open:
    with matrix_tab:
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
        for column, (matrix, row_title, column_title, title, colours) in zip(
            st.columns(2), stacked, strict=True
        ):
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
