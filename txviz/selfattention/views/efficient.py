"""The cheaper scorings on the self-attention page: additive (Bahdanau), and linear, Linformer and
Performer attention on one MiniLM head."""

from __future__ import annotations

import streamlit as st

from txviz import page_map
from txviz.app import navigation, ui, widgets
from txviz.selfattention import additive, efficient, linear
from txviz.selfattention import figures as figs
from txviz.selfattention import toy as ta
from txviz.selfattention.views import common
from txviz.selfattention.views.common import ToySettings, show_matrix


def additive_scores(settings: ToySettings) -> None:
    """Bahdanau's additive score beside the dot product, on the toy's first head."""
    common.elsewhere_note(settings)
    config, tokens, scaled = settings.config, settings.tokens, settings.scaled
    st.markdown(
        "Bahdanau et al. (2015) scored a query against a key with a small feed-forward net instead "
        "of a dot product. Same Q, K and V as the first tab (from the seed), two ways to score them:"
    )
    st.latex(
        r"\text{additive: } s_{nm} = w^\top \tanh(W q_n + U k_m) \qquad \text{dot-product: } s_{nm} = \frac{q_n \cdot k_m}{\sqrt{d}}"
    )
    hidden_size = st.slider("Hidden units h of the scoring net", 1, additive.MAX_HIDDEN, 8, key="additive_h")
    with ui.user_errors():
        dot_head = ta.self_attention_head(ta.toy_input(config), ta.toy_heads(config)[0], scaled)
        additive_weights = additive.seeded_weights(config.d_head, hidden_size, config.seed)
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
        "Scores of query", range(config.n_tokens), format_func=lambda i: tokens[i], key="additive_query"
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


def softmax_beside(softmax, labels: list[str], key: str, other, other_key: str) -> None:
    """MiniLM's own weights on the left, an estimate of them on the right."""
    cols = st.columns(2)
    with cols[0]:
        ui.show_figure(figs.weights_figure(softmax, labels, "Softmax: MiniLM's own weights"), key=key)
    with cols[1]:
        ui.show_figure(other, key=other_key)


def linear_attention(_: ToySettings) -> None:
    """elu + 1 linear attention on a MiniLM head, its cost, then Linformer and Performer."""
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
    linear_figure = figs.weights_figure(result.linear, labels, "Linear: φ(q)·φ(k), normalised")
    softmax_beside(result.softmax, labels, "linear_soft", linear_figure, "linear_lin")
    st.caption(
        f"q and k are MiniLM's captured ones (softmax recomputed from them matches its weights within "
        f"{result.recomputed_vs_captured:.0e}); v comes from the layer's value projection. MiniLM was "
        "trained with softmax: the linear weights are flatter (φ is not exp), which is the error above. "
        "A model trained with linear attention learns q and k that suit it."
    )
    cost_against_n()
    head = (minilm, linear_text, linear_layer, linear_head_index)
    linformer_and_performer(head, labels, result.softmax)
    efficient_families()


def cost_against_n() -> None:
    """Softmax and linear attention timed on this machine, on a click."""
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


def linformer_and_performer(head: tuple, labels: list[str], softmax) -> None:
    """Linformer's and Performer's errors on the same head, and why Performer needs short q and k."""
    st.subheader("Low rank (Linformer) and random features (Performer), on the same head")
    st.markdown(
        "**Linformer** (Wang et al. 2020) projects the n keys and values to kp rows with a kp × n matrix "
        "E: softmax(q (E K)ᵀ/√d) (E V), O(n kp d). **Performer** (Choromanski et al. 2021, FAVOR+) "
        "estimates exp(q·k/√d) by φ(q)·φ(k) with m positive random features "
        "φ(x) = exp(w·x − |x|²/2)/√m, w Gaussian and orthogonal in blocks: unbiased, and closer as m "
        "grows. Like elu + 1, both factor the sum over keys, so the n × n matrix is never built."
    )
    cols = st.columns(3)
    n_tokens_here = len(labels)
    kp = cols[0].slider("Linformer kp", 1, n_tokens_here, max(1, n_tokens_here // 2), key="linformer_kp")
    kind = cols[1].selectbox("Projection E", efficient.PROJECTIONS, key="linformer_projection")
    features = cols[2].select_slider("Performer features m", efficient.FEATURE_COUNTS, 64, key="performer_m")
    versus = efficient_numbers(*head, kp, kind, features)
    cols = st.columns(3)
    cols[0].metric("Linformer output error", f"{versus.comparison.linformer_error:.3f}")
    cols[1].metric("Performer output error", f"{versus.comparison.performer_error:.3f}")
    cols[2].metric("elu + 1 output error", f"{versus.comparison.elu_error:.3f}")
    performer = figs.weights_figure(
        versus.comparison.performer_weights, labels, f"Performer estimate, m = {features}"
    )
    softmax_beside(softmax, labels, "efficient_soft", performer, "efficient_performer")
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
    why_performer(versus)


def why_performer(versus) -> None:
    """Performer's feature variance on this head and on a cooled copy, and what it implies."""
    calm = versus.calm_temperature
    cols = st.columns(4)
    cols[0].metric("This head: max |q + k|²/√d", f"{versus.spread:.2f}")
    cols[1].metric("One feature's relative variance", f"{efficient.feature_variance(versus.spread):.2e}")
    cols[2].metric(f"Cooled (q, k / √{calm}): max |q + k|²/√d", f"{versus.calm_spread:.2f}")
    cols[3].metric("Cooled: one feature's variance", f"{efficient.feature_variance(versus.calm_spread):.2e}")
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


def efficient_families() -> None:
    """Where each family of efficient transformers is drawn elsewhere in txviz."""
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
