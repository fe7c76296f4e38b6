"""Where self-attention is linear and where it is not, measured on the Self-Attention page's toy head.

For fixed weights A the output A V is linear in the values V. But A = softmax(Q K^T / sqrt(d)) with
Q = X Omega_q^T and K = X Omega_k^T is a function of the inputs X, so the head is not linear in X:
doubling X sharpens the softmax, and f(2X) differs from 2 f(X). What the block's feed-forward network
adds is a nonlinearity applied to each token's values, which attention alone lacks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from txviz.selfattention.toy import ToyConfig, self_attention_head, toy_heads, toy_input

CONFIG = ToyConfig(n_tokens=3, d_model=4, n_heads=1, seed=0)  # the toy's preset: 3 tokens, 4 dimensions
SCALE = 2.0


@dataclass(frozen=True)
class Linearity:
    """How far the toy head is from linear in X, and how close to linear in V for fixed weights."""

    scale: float
    gap_in_x: float  # max |f(aX) - a f(X)| / max |a f(X)|
    weights_change: float  # max |A(aX) - A(X)|: the softmax moves when the inputs do
    gap_in_v: float  # max |A(aV1 + V2) - (a A V1 + A V2)| for A held fixed


def measure(scale: float = SCALE, config: ToyConfig = CONFIG) -> Linearity:
    """f(aX) against a f(X) on the toy head, biases set to zero so a linear map would pass exactly."""
    x = toy_input(config)
    head = toy_heads(config)[0]
    zero = np.zeros(head.d_head)
    head = replace(head, beta_q=zero, beta_k=zero, beta_v=zero)  # without biases Q, K, V are linear in X
    plain, scaled = self_attention_head(x, head), self_attention_head(scale * x, head)
    expected = scale * plain.output
    rng = np.random.default_rng(config.seed)
    v1, v2 = rng.normal(size=(2, *plain.values.shape))
    weights = plain.weights
    mixed = weights @ (scale * v1 + v2) - (scale * (weights @ v1) + weights @ v2)
    return Linearity(
        scale=scale,
        gap_in_x=float(np.abs(scaled.output - expected).max() / np.abs(expected).max()),
        weights_change=float(np.abs(scaled.weights - plain.weights).max()),
        gap_in_v=float(np.abs(mixed).max()),
    )


def sentence(result: Linearity) -> str:
    """One line for the map: nonlinear in X, linear in V, with the toy's numbers."""
    a = f"{result.scale:g}"
    return (
        f"Self-attention is nonlinear in its input: on the Self-Attention page's toy head (biases zeroed), "
        f"f({a}X) differs from {a}·f(X) by {result.gap_in_x:.0%} of its size, because the weights "
        f"softmax(X W_q W_kᵀ Xᵀ/√d) move by up to {result.weights_change:.2f}. For fixed weights it is "
        f"linear in the values (gap {result.gap_in_v:.0e}): what it lacks is a nonlinearity on the values, "
        "which the feed-forward network adds."
    )
