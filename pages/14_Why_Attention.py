"""Why attention: a CNN, an RNN and self-attention compared by path length and cost, measured here (Table 15.1)."""

import pandas as pd
import streamlit as st

from txviz.app import hierarchy_view, teaching, ui
from txviz.why import convolution, cost, forgetting, paths, table
from txviz.why import figures as figs

VIEWS = ["Path length", "Cost", "Table 15.1", "Attention = convolution", "Nested phrases"]
CURVE_NS = (1, 2, 4, 8, 12, 16, 24, 32)
N_SIZES = (16, 32, 64, 128, 256, 512, 1024)
D_SIZES = (16, 32, 64, 128, 256, 512)
COLUMNS = {
    "Complexity per layer": (
        "Counted in multiply-adds (the FLOPs on the charts are twice these). A convolution applies a "
        "d x k d matrix at each of n positions: k n d². A recurrent layer multiplies the input and the "
        "hidden state each by a d x d matrix at each of n steps: 2 n d². Self-attention multiplies the "
        "n x d queries by the d x n keys and the n x n weights by the n x d values: 2 n² d. So "
        "self-attention is the cheaper layer while n < d (its Q, K, V and output projections add 4 n d² "
        "on top, as much as two recurrent layers). The counted FLOPs grow with exactly these exponents."
    ),
    "Sequential operations": (
        "The RNN cannot compute h_t before h_(t-1): n operations one after another, whatever the hardware. "
        "A convolution and self-attention compute all n outputs at once, O(1) sequential operations, so "
        "more cores help them; the RNN's steps are each too small to share out, which the thread "
        "comparison measures."
    ),
    "Maximum path length": (
        "The number of layers a signal crosses from x_j to y_i. A stack of convolutions with kernel k "
        "needs about n/k layers before the last output reads the first input (log_k n with dilations "
        "1, k, k², ...). The book says both: its text gives O(n/k) for contiguous kernels and O(log_k n) "
        "for dilated ones, while its Table 15.1 (after Vaswani et al. 2017) lists O(log_k n) for the "
        "convolutional layer, the dilated figure; the table here shows both. An RNN passes x_1 through "
        "n cell applications to reach y_n; one self-attention layer connects every pair directly. Short "
        "paths make long-range dependencies easier to learn."
    ),
}

ui.setup_page(
    "Why_Attention",
    "Table 15.1 of the book compares a CNN, an RNN and self-attention mapping x_1..x_n to y_1..y_n. "
    "Here every cell is measured: which inputs each output depends on (from autograd Jacobians of "
    "real torch layers), and what a layer costs (FLOPs counted by torch, wall time on this machine).",
)


@ui.shared_resource(max_entries=32, spinner="Differentiating the stacks...")
def cached_grids(n: int, k: int, depth: int) -> dict:
    return {kind: paths.dependence(kind, n, k, depth) for kind in paths.KINDS}


@ui.shared_resource(max_entries=16, spinner="Measuring the path length at each n...")
def cached_depths(k: int, ns: tuple[int, ...]) -> dict:
    return {kind: [paths.measured_depth(kind, n, k) for n in ns] for kind in paths.KINDS}


@ui.shared_resource(max_entries=8, spinner="Counting FLOPs and timing each layer (about 20 s)...")
def cached_costs(d: int, n_fixed: int, k: int, thread_n: int, thread_d: int, run: int):
    by_n = cost.sweep("n", N_SIZES, d, k, budget_s=5.0)
    by_d = cost.sweep("d", D_SIZES, n_fixed, k, budget_s=4.0)
    return by_n, by_d, cost.thread_times(thread_n, thread_d, k)


@ui.shared_resource(max_entries=16, spinner="Differentiating the GRU and attention...")
def cached_forgetting(steps: int):
    return forgetting.forgetting(steps)


left, right = st.columns(2)
n = int(
    left.number_input(
        "Sequence length n", 1, paths.MAX_N, ui.link_value("n", 8, range(1, paths.MAX_N + 1)), key="n"
    )
)
k = int(right.number_input("Kernel size k", 1, 64, ui.link_value("k", 3, range(1, 65)), key="k"))
with ui.user_errors():
    paths.check(n, k)
if notice := paths.kernel_notice(n, k):
    st.info(notice)
if n == 1:
    st.info("With n = 1 there is one input and one output: every stack connects them in one layer.")

path_tab, cost_tab, table_tab, conv_tab, nested_tab = st.tabs(
    VIEWS, key="view", on_change="rerun", default=ui.link_tab("view", VIEWS)
)

if path_tab.open:
    depth = st.slider(
        "Layers (for the RNN: recurrent steps)",
        1,
        max(2, n),
        ui.link_value("depth", min(2, max(2, n)), range(1, max(2, n) + 1)),
        key="depth",
    )
    grids = cached_grids(n, k, depth)
    shown = {kind: grid[-1] for kind, grid in grids.items()}
    ui.show_figure(
        figs.dependence_grids(shown, {kind: len(grid) for kind, grid in grids.items()}), key="grids"
    )
    teaching.notice(
        "one self-attention layer already connects every output to every input, while a convolution's reach "
        "grows by k − 1 positions per layer and the RNN's by one input per step."
    )
    st.caption(
        "Dark: ∂y_i/∂x_j ≠ 0 in the Jacobian of the stack (torch.autograd, float64, tanh between layers). "
        "The convolutions are causal (they read the past, as in WaveNet); the dilated stack spaces its taps "
        "1, k, k², ... apart. The RNN at depth s computes y_i from its s latest inputs (GRU, zero start). "
        "Why the RNN looks local: its depth is its sequential steps, so depth s is the GRU run over a window "
        "of s inputs, what s steps can reach; a GRU over the whole sequence reads every earlier input, but "
        "x_j reaches y_i only through i − j steps, the O(n) path of Table 15.1 (forgetting, below)."
    )
    st.subheader("The book's example: x_1 and x_5, kernel 3")
    for step in paths.pair_steps("conv", 5, 3, 1, 5):
        if step.depth == 0:
            st.markdown(f"- inputs: x_1 and x_5 span **{step.span}** positions")
        elif step.span > 1:
            st.markdown(
                f"- after layer {step.depth}: the nearest outputs reading them, h_{step.left} and "
                f"h_{step.right}, span **{step.span}** positions"
            )
        else:
            st.markdown(f"- after layer {step.depth}: **y_{step.left} reads both**: connected")
    depths = cached_depths(k, CURVE_NS)
    ui.show_figure(figs.depth_against_n(list(CURVE_NS), depths, k), key="depth_curve")
    st.markdown(f"**Maximum path length.** {COLUMNS['Maximum path length']}")
    st.subheader("How fast an RNN forgets")
    steps_back = st.slider(
        "Sequence length for this plot",
        2,
        forgetting.MAX_STEPS,
        ui.link_value("forget_n", 32, range(2, forgetting.MAX_STEPS + 1)),
        key="forget_n",
    )
    forgot = cached_forgetting(steps_back)
    ui.show_figure(figs.forgetting_lines(forgot), key="forgetting")
    st.caption(
        f"The GRU above (float64, seeded) run over {steps_back} random inputs from a zero state, and one "
        "self-attention layer on the same inputs; autograd Jacobians of the last output, geometric mean "
        f"over 8 input draws. Through the GRU the dependence shrinks by about {forgot.decay_per_step:.2f} "
        f"per step back (it halves every {forgot.half_life:.1f} steps): x_(n-k) reaches y_n through k "
        "step Jacobians multiplied together. Through attention every input is one step away, so the "
        "dependence has no trend with k (x_n is larger: it is also the query). A trained RNN can learn "
        "gates that forget more slowly, but its path stays k steps long."
    )

if cost_tab.open or table_tab.open:
    c1, c2, c3 = st.columns(3)
    d = int(c1.select_slider("d for the n sweep", [16, 32, 64, 128], 64, key="d"))
    n_fixed = int(c2.select_slider("n for the d sweep", [32, 64, 128, 256], 128, key="n_fixed"))
    thread_n = int(c3.select_slider("n for the thread test", [128, 256, 512, 1024], 512, key="thread_n"))
    # Measuring takes tens of seconds: it waits for the button, then stays for the session.
    measured = "_why_run" in st.session_state
    label = "Measure again" if measured else "Count FLOPs and time each layer (about 20 s)"
    if st.button(label, key="remeasure", type="secondary" if measured else "primary"):
        st.session_state["_why_run"] = st.session_state.get("_why_run", -1) + 1
        st.rerun()  # the button's label follows at once
    if measured:
        by_n, by_d, threads = cached_costs(d, n_fixed, k, thread_n, 128, st.session_state["_why_run"])
    else:
        st.caption(
            "The cost and the table are measured on this machine: every layer type counted and timed at "
            f"{len(N_SIZES) + len(D_SIZES)} sizes. Press the button to measure."
        )

if cost_tab.open and measured:
    metrics = ["FLOPs (counted)", "wall time"]
    metric = st.radio(
        "Measure", metrics, index=ui.link_index("metric", metrics), horizontal=True, key="metric"
    )

    key = "flops" if metric.startswith("FLOPs") else "seconds"
    left, right = st.columns(2)
    with left:
        ui.show_figure(figs.cost_lines(by_n, key), key="by_n")
    with right:
        ui.show_figure(figs.cost_lines(by_d, key), key="by_d")
    values = by_n.flops if key == "flops" else by_n.seconds
    lines = []
    for other in ("rnn", "gru", "conv", "attention+proj"):
        where = cost.crossing(by_n.sizes, values["attention"], values[other])
        verdict = f"cross at n ≈ {where:.0f}" if where else "do not cross in this range"
        lines.append(f"- self-attention and {cost.LABELS[other]}: {verdict}")
    st.markdown(f"**Where the lines cross** ({metric}, d = {d}, k = {k}):\n" + "\n".join(lines))
    st.caption(
        f"Formulas: RNN 4 n d², so the crossing with self-attention's 4 n² d is n = d = {d}; a CNN "
        f"2 k n d² crosses it at n = k d / 2 = {k * d / 2:.0f}. Wall time adds what FLOPs ignore: "
        "each RNN step is a separate small matrix product."
    )
    st.markdown(f"**Complexity per layer.** {COLUMNS['Complexity per layer']}")
    ui.show_figure(figs.thread_bars(threads), key="threads")
    st.caption(
        "torch.set_num_threads(1) and (2) in alternating blocks, per layer; the previous setting is restored. "
        "Each bar is the fastest run: this machine is shared, and a second thread that waits for a busy core "
        "makes the median tens of times slower, which says nothing about the layer. The convolution and "
        "self-attention split their work across threads; the RNN's steps are too small to split. Times "
        "are noisy: press 'Measure again' to repeat."
    )
    st.markdown(f"**Sequential operations.** {COLUMNS['Sequential operations']}")

if table_tab.open and measured:
    depth_at_n = {kind: values[0] for kind, values in cached_depths(k, (n,)).items()}
    rows = pd.DataFrame(table.rebuilt_table(by_n, by_d, threads, depth_at_n, n, k)).set_index("layer")
    st.dataframe(rows.T)  # one column per layer type: each measured cell under the book's entry
    st.caption(
        f"FLOP exponents fitted on log-log axes over n = {N_SIZES[0]}..{N_SIZES[-1]} (d = {d}) and "
        f"d = {D_SIZES[0]}..{D_SIZES[-1]} (n = {n_fixed}); the time exponent over n on one thread; the "
        f"speed-up at n = {thread_n}, d = 128. The dilated CNN costs what the CNN costs per layer."
    )
    for column, text in COLUMNS.items():
        st.markdown(f"**{column}.** {text}")


@ui.shared_resource(max_entries=16, spinner="Running the hand-set heads...")
def cached_convolution(k: int, kernel: str, alpha: float, index: int, query: tuple[int, int]):
    weights = convolution.kernels(k)[kernel][None, None]
    return convolution.attention_convolution(convolution.digit(index), weights, alpha, query)


if conv_tab.open:
    with conv_tab:
        st.markdown(
            "Self-attention can be a convolution (Cordonnier, Loukas and Jaggi, 2020). Give a layer k² "
            "heads; head h scores the pixel at offset δ from the query with the quadratic encoding "
            "r_δ = (|δ|², δ_y, δ_x), so its softmax peaks on one offset Δ_h. The value projection is the "
            "identity and head h's output projection is the kernel's weight at Δ_h: the sum over heads is "
            "the convolution."
        )
        st.latex(
            r"v_h \cdot r_\delta = -\alpha\,(|\delta|^2 - 2\,\Delta_h\cdot\delta) = -\alpha\,|\delta - \Delta_h|^2 + \alpha|\Delta_h|^2, \qquad \mathrm{MHSA}(X)_q = \sum_h W_h \sum_k \mathrm{softmax}_k(v_h \cdot r_{k-q})\, x_k"
        )
        cols = st.columns(4)
        size = cols[0].radio("Kernel k x k", convolution.KERNEL_SIZES, horizontal=True, key="conv_k")
        kernel = cols[1].selectbox("Kernel", list(convolution.kernels(size)), key="conv_kernel")
        alpha = cols[2].select_slider("Sharpness α", [0.3, 1.0, 3.0, 10.0, 50.0], 50.0, key="conv_alpha")
        index = int(cols[3].number_input("Digit (scikit-learn index)", 0, 1796, 0, key="conv_digit"))
        cols = st.columns(2)
        y = cols[0].slider("Query pixel row", 0, 23, 12, key="conv_y")
        x = cols[1].slider("Query pixel column", 0, 23, 12, key="conv_x")
        with ui.user_errors():
            result = cached_convolution(size, kernel, alpha, index, (y, x))
        cols = st.columns(3)
        cols[0].metric("Largest |attention − conv2d|", f"{result.max_abs_difference:.1e}")
        cols[1].metric("Heads", size * size)
        cols[2].metric(
            f"Least weight of a head of ({y}, {x}) on its own offset", f"{result.own_weight.min():.4f}"
        )
        ui.show_figure(figs.convolution_figure(result, ui.presenting()), key="conv_figure")
        st.caption(
            "Torch's conv2d with zero padding k // 2 beside the k² hand-set heads over the zero-padded "
            "pixels (float64). With α = 50 the weight off each head's own offset is below e^−50 and the "
            "two agree to rounding; small α blurs each head over its neighbours and they part. The "
            "last panel is the local mask: the chosen pixel's heads together attend to its k x k window "
            "and nothing else. A learned layer need not find this solution; the construction shows "
            "attention with relative positions can express any convolution, at k² heads for one kernel."
        )

if nested_tab.open:
    with nested_tab:
        hierarchy_view.show()
