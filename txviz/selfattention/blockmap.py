"""Prince's Fig. 12.2 (b, c) on a real head: self-attention as block-sparse matrices on stacked vectors.

Stack a layer's N inputs into one N*D vector. The values are a block-diagonal map of it (every
diagonal block Omega_v, the same weights for every token, plus beta_v); the attention then mixes the
stacked values with the N*D_h x N*D_h matrix A (x) I, whose block (i, j) is a_ij times the identity.
The output is linear in the values, but a_ij is a softmax of the inputs: doubling the inputs does
not double the output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import UserError, require_kind
from txviz.core.layouts import cached_layout
from txviz.core.tracing import trace_run

MAX_TOKENS = 12  # the map on the inputs is N*D_h x N*D floats: 768 x 4,608 for MiniLM at 12 tokens


class BlockMapError(UserError):
    """A layer or head outside the model."""


@dataclass(frozen=True)
class HeadAsMatrices:
    """One BERT head on a text: its inputs, value weights, captured attention and captured output."""

    tokens: tuple[str, ...]
    inputs: np.ndarray  # (N, D) the stream entering the layer
    omega_v: np.ndarray  # (D_h, D) the head's rows of the value projection
    beta_v: np.ndarray  # (D_h,)
    omega_qk: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # Omega_q, beta_q, Omega_k, beta_k
    weights: np.ndarray  # (N, N) captured a_ij, rows are queries (outputs)
    output: np.ndarray  # (N, D_h) the head's captured output, before the output projection
    notice: str = ""

    @property
    def values(self) -> np.ndarray:
        """(N, D_h) v_n = beta_v + Omega_v x_n, token by token."""
        return self.inputs @ self.omega_v.T + self.beta_v


@torch.no_grad()
def minilm_head_matrices(loaded, text: str, layer: int, head: int) -> HeadAsMatrices:
    """One pass of a BERT-family encoder: the layer's input, the head's weights, attention and output."""
    require_kind(loaded, ("encoder",), "write one head as block matrices")
    if not 0 <= layer < loaded.n_layers or not 0 <= head < loaded.n_heads:
        raise BlockMapError(f"Layer {layer}, head {head} is outside {loaded.name}.")
    trace, result = trace_run(
        loaded, text, max_tokens=MAX_TOKENS, record=("weights", "head_out"), outputs=("hidden_states",)
    )
    layout = cached_layout(loaded.model)
    parts = layout.record.attention if layout.record else None
    if parts is None or parts.q is None:
        raise BlockMapError(
            f"txviz does not know where {loaded.name}'s query, key and value projections are."
        )
    block = layout.block(loaded.model, layout.last_stack, layer)
    query, key, value = (block.get_submodule(p) for p in (parts.q, parts.k, parts.v))
    d_head = value.weight.shape[0] // loaded.n_heads
    rows = slice(head * d_head, (head + 1) * d_head)

    def part(linear) -> tuple[np.ndarray, np.ndarray]:
        return (
            linear.weight[rows].double().cpu().numpy(),
            linear.bias[rows].double().cpu().numpy(),
        )

    omega_v, beta_v = part(value)
    return HeadAsMatrices(
        tokens=tuple(trace.query_tokens),
        inputs=result.hidden_states[layer][0].double().cpu().numpy(),
        omega_v=omega_v,
        beta_v=beta_v,
        omega_qk=(*part(query), *part(key)),
        weights=trace.weights[layer, head].astype(np.float64),
        output=result.head_output(layer, head)[0].double().cpu().numpy(),
        notice=trace.notice,
    )


def value_map(omega_v: np.ndarray, n: int) -> np.ndarray:
    """Fig. 12.2 (b): I_N (x) Omega_v, block-diagonal, N*D_h x N*D; every token gets the same Omega_v."""
    return np.kron(np.eye(n), omega_v)


def mixing_map(weights: np.ndarray, d_head: int) -> np.ndarray:
    """Fig. 12.2 (c): A (x) I_(D_h), N*D_h x N*D_h; block (i, j) is a_ij times the identity."""
    return np.kron(weights, np.eye(d_head))


@dataclass(frozen=True)
class BlockMapCheck:
    """How well the stacked-matrix form reproduces the head, and how far from linear in X it is."""

    max_abs_difference: float  # |(A (x) I)((I (x) Omega_v) vec X + 1 (x) beta_v) - head output|
    whole_map_difference: float  # the same with the one matrix A (x) Omega_v on vec X
    recomputed_weights_difference: float  # |softmax(q k^T / sqrt d) from the weights - captured a|
    doubled_weights_change: float  # max |A(2X) - A(X)|: the weights move when the inputs do
    doubled_output_gap: float  # on 2X's values: max |A(2X) V - A(X) V| / max |A(X) V|, the weights' share


def softmax_weights(head: HeadAsMatrices, inputs: np.ndarray) -> np.ndarray:
    """a_ij recomputed from the head's query and key weights (one sequence, no padding)."""
    omega_q, beta_q, omega_k, beta_k = head.omega_qk
    q, k = inputs @ omega_q.T + beta_q, inputs @ omega_k.T + beta_k
    scores = q @ k.T / np.sqrt(q.shape[1])
    scores -= scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=1, keepdims=True)


def check(head: HeadAsMatrices) -> BlockMapCheck:
    """Apply the book's matrices to the stacked inputs and compare with the model's own head output."""
    n, d_head = head.output.shape
    stacked_values = value_map(head.omega_v, n) @ head.inputs.reshape(-1) + np.tile(head.beta_v, n)
    output = (mixing_map(head.weights, d_head) @ stacked_values).reshape(n, d_head)
    whole = np.kron(head.weights, head.omega_v) @ head.inputs.reshape(-1)
    whole += np.kron(head.weights, np.eye(d_head)) @ np.tile(head.beta_v, n)
    recomputed = softmax_weights(head, head.inputs)
    doubled = softmax_weights(head, 2 * head.inputs)
    doubled_values = 2 * head.inputs @ head.omega_v.T + head.beta_v
    held = recomputed @ doubled_values  # what a map linear in X would give: the weights held
    return BlockMapCheck(
        max_abs_difference=float(np.abs(output - head.output).max()),
        whole_map_difference=float(np.abs(whole.reshape(n, d_head) - head.output).max()),
        recomputed_weights_difference=float(np.abs(recomputed - head.weights).max()),
        doubled_weights_change=float(np.abs(doubled - recomputed).max()),
        doubled_output_gap=float(np.abs(doubled @ doubled_values - held).max() / np.abs(held).max()),
    )


def stacked_labels(tokens: tuple[str, ...], dims: int) -> list[str]:
    """Row and column names of a stacked vector: token, then the dimension within its block."""
    return [f"{token}·{j}" for token in tokens for j in range(dims)]
