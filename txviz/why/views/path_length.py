"""Why Attention's Path length tab: which inputs each output reads, per stack and depth, and how fast
an RNN forgets."""

import streamlit as st

from txviz.app import teaching, ui
from txviz.why import figures as figs
from txviz.why import forgetting, paths
from txviz.why.views import COLUMNS, Sizes

CURVE_NS = (1, 2, 4, 8, 12, 16, 24, 32)


@ui.shared_resource(max_entries=32, spinner="Differentiating the stacks...")
def cached_grids(n: int, k: int, depth: int) -> dict:
    return {kind: paths.dependence(kind, n, k, depth) for kind in paths.KINDS}


@ui.shared_resource(max_entries=16, spinner="Measuring the path length at each n...")
def cached_depths(k: int, ns: tuple[int, ...]) -> dict:
    return {kind: [paths.measured_depth(kind, n, k) for n in ns] for kind in paths.KINDS}


@ui.shared_resource(max_entries=16, spinner="Differentiating the GRU and attention...")
def cached_forgetting(steps: int):
    return forgetting.forgetting(steps)


def show(sizes: Sizes) -> None:
    """The dependence grids at a depth, the book's x_1 / x_5 example, depth against n, forgetting."""
    n, k = sizes.n, sizes.k
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
