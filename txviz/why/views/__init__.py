"""Why Attention's tabs, one module each (Cost and Table 15.1 share one: they share a measurement),
and what they share: the page's n and k, and the text of Table 15.1's three columns."""

from dataclasses import dataclass

import streamlit as st

from txviz.app import ui
from txviz.why import paths

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


@dataclass(frozen=True)
class Sizes:
    """The sequence length and kernel size every tab but the last two reads."""

    n: int
    k: int


def sizes() -> Sizes:
    """The n and k boxes above the tabs, checked, with a note when they make a corner case."""
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
    return Sizes(n, k)
