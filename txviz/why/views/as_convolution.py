"""Why Attention's Attention = convolution tab: k² hand-set heads with a quadratic position encoding
reproduce a k x k convolution (Cordonnier, Loukas and Jaggi 2020)."""

import streamlit as st

from txviz.app import ui
from txviz.why import convolution
from txviz.why import figures as figs
from txviz.why.views import Sizes


@ui.shared_resource(max_entries=16, spinner="Running the hand-set heads...")
def cached_convolution(k: int, kernel: str, alpha: float, index: int, query: tuple[int, int]):
    weights = convolution.kernels(k)[kernel][None, None]
    return convolution.attention_convolution(convolution.digit(index), weights, alpha, query)


def show(sizes: Sizes) -> None:
    """The construction, its own kernel and digit pickers, and attention beside torch's conv2d."""
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
