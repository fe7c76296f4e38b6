"""Linear attention (Katharopoulos et al., 2020, "Transformers are RNNs") on MiniLM's real q, k, v.

Softmax attention weighs value m by exp(q.k_m / sqrt(d)); linear attention by phi(q).phi(k_m) with
phi(x) = elu(x) + 1 > 0. Then sum_m phi(q).phi(k_m) v_m = phi(q) (sum_m phi(k_m) v_m^T): the sum
over keys is computed once, O(n d^2) instead of O(n^2 d). Causal, it is a recurrence: a running
d x d state S_i = S_(i-1) + phi(k_i) v_i^T and normaliser z_i = z_(i-1) + phi(k_i), like an RNN.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import UserError, require_kind
from txviz.core.tracing import trace_run


class LinearAttentionError(UserError):
    """Bad input to the linear-attention view, with a message fit for the user."""


def phi(x: np.ndarray) -> np.ndarray:
    """elu(x) + 1: x + 1 for x > 0, exp(x) otherwise; always positive."""
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def _causal(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=bool))


def softmax_weights(q: np.ndarray, k: np.ndarray, causal: bool = False) -> np.ndarray:
    """softmax(q k^T / sqrt(d)) row by row, future keys masked when causal; (n, n)."""
    from scipy.special import softmax  # imported on use, like the rest of scipy here

    scores = q @ k.T / np.sqrt(q.shape[-1])
    if causal:
        scores = np.where(_causal(len(q)), scores, -np.inf)
    return softmax(scores, axis=-1)


def linear_weights(q: np.ndarray, k: np.ndarray, causal: bool = False) -> np.ndarray:
    """phi(q) phi(k)^T normalised row by row: the n x n matrix linear attention never builds; (n, n)."""
    kernel = phi(q) @ phi(k).T
    if causal:
        kernel = np.where(_causal(len(q)), kernel, 0.0)
    return kernel / kernel.sum(axis=-1, keepdims=True)


def linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Non-causal linear attention in O(n d^2): phi(Q) (phi(K)^T V) / phi(Q) (phi(K)^T 1); (n, d_v)."""
    fq, fk = phi(q), phi(k)
    state = fk.T @ v  # (d, d_v): every key and value summed once
    normaliser = fk.sum(axis=0)  # (d,)
    return (fq @ state) / (fq @ normaliser)[:, None]


def recurrent_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Causal linear attention as an RNN: one d x d_v state and a d normaliser carried token by token."""
    fq, fk = phi(q), phi(k)
    state = np.zeros((q.shape[1], v.shape[1]))
    normaliser = np.zeros(q.shape[1])
    outputs = np.empty((len(q), v.shape[1]))
    for i in range(len(q)):
        state += np.outer(fk[i], v[i])
        normaliser += fk[i]
        outputs[i] = fq[i] @ state / (fq[i] @ normaliser)
    return outputs


@dataclass(frozen=True)
class HeadQKV:
    """One head's queries, keys and values on a text, from MiniLM itself."""

    tokens: tuple[str, ...]
    queries: np.ndarray  # (n, d)
    keys: np.ndarray  # (n, d)
    values: np.ndarray  # (n, d)
    captured_weights: np.ndarray  # (n, n) MiniLM's softmax weights, as recorded
    notice: str = ""


@torch.no_grad()
def minilm_head(loaded, text: str, layer: int, head: int, max_tokens: int = 128) -> HeadQKV:
    """Captured q, k, v and weights of one head of an encoder."""
    require_kind(loaded, ("encoder",), "show one head's queries, keys and values")
    if not 0 <= layer < loaded.n_layers or not 0 <= head < loaded.n_heads:
        raise LinearAttentionError(f"Layer {layer}, head {head} is outside {loaded.name}.")
    # one pass records the queries, keys and values of every layer
    trace, result = trace_run(loaded, text, max_tokens=max_tokens, record=("queries", "keys", "values"))
    values = result["values", layer][0, head].numpy()  # (n, d)
    return HeadQKV(
        tuple(trace.query_tokens),
        trace.queries[layer, head].astype(np.float64),
        trace.keys[layer, head].astype(np.float64),
        values.astype(np.float64),
        trace.weights[layer, head].astype(np.float64),
        trace.notice,
    )


@dataclass(frozen=True)
class LinearComparison:
    """Linear against softmax attention on one head, both non-causal and causal."""

    softmax: np.ndarray  # (n, n)
    linear: np.ndarray  # (n, n)
    weight_distance: float  # mean over queries of total variation, 0.5 sum |a_lin - a_soft|
    output_error: float  # ||O_lin - O_soft|| / ||O_soft||, outputs = weights @ V
    fast_vs_matrix: float  # max |O(n) form - weights @ V|: the two ways give the same outputs
    recurrent_vs_parallel: float  # causal: max |RNN form - masked matrix form|
    recomputed_vs_captured: float  # max |softmax(q k^T / sqrt d) - MiniLM's weights|


def compare(head: HeadQKV) -> LinearComparison:
    """Every number of the linear-attention tab for one head."""
    q, k, v = head.queries, head.keys, head.values
    soft, lin = softmax_weights(q, k), linear_weights(q, k)
    out_soft, out_lin = soft @ v, lin @ v
    causal = linear_weights(q, k, causal=True) @ v
    return LinearComparison(
        softmax=soft,
        linear=lin,
        weight_distance=float(0.5 * np.abs(lin - soft).sum(axis=1).mean()),
        output_error=float(np.linalg.norm(out_lin - out_soft) / np.linalg.norm(out_soft)),
        fast_vs_matrix=float(np.abs(linear_attention(q, k, v) - out_lin).max()),
        recurrent_vs_parallel=float(np.abs(recurrent_linear_attention(q, k, v) - causal).max()),
        recomputed_vs_captured=float(np.abs(soft - head.captured_weights).max()),
    )


@dataclass(frozen=True)
class Timing:
    """Median seconds of one attention call, softmax and linear, at one length."""

    n: int
    softmax_s: float
    linear_s: float

    @property
    def ratio(self) -> float:
        """How many times longer softmax attention took."""
        return self.softmax_s / self.linear_s


def _median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def time_both(ns, d: int = 64, repeats: int = 5, seed: int = 0) -> list[Timing]:
    """Softmax attention (builds the n x n matrix) against linear attention (a d x d state), torch CPU."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for n in ns:
        q, k, v = (torch.randn(n, d, generator=generator) for _ in range(3))

        def softmax_call(q=q, k=k, v=v):
            return torch.softmax(q @ k.T / d**0.5, dim=-1) @ v

        def linear_call(q=q, k=k, v=v):
            fq, fk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
            return (fq @ (fk.T @ v)) / (fq @ fk.sum(0))[:, None]

        rows.append(Timing(n, _median_seconds(softmax_call, repeats), _median_seconds(linear_call, repeats)))
    return rows
