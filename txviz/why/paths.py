"""Which inputs each output depends on, read from autograd Jacobians of real layer stacks (Table 15.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from txviz.core.errors import UserError
from txviz.core.threads import torch_threads

KINDS = ("conv", "dilated", "rnn", "attention")
LABELS = {
    "conv": "CNN (kernel k)",
    "dilated": "dilated CNN (dilation k^l)",
    "rnn": "RNN (GRU)",
    "attention": "self-attention",
}
DEPTH_NAMES = {"conv": "layer", "dilated": "layer", "rnn": "recurrent step", "attention": "layer"}
CHANNELS = 4  # which inputs an output reads does not depend on the width; a small d keeps Jacobians cheap
MAX_N = 64


class PathInputError(UserError):
    """A sequence length or kernel size the measurement cannot use."""


def check(n: int, k: int) -> None:
    """Reject what no stack can be built for; the message is for the user."""
    if n < 1:
        raise PathInputError(f"n must be at least 1 (got {n}).")
    if n > MAX_N:
        raise PathInputError(f"n is at most {MAX_N} here: the Jacobian grows as n squared (got {n}).")
    if k < 2:
        raise PathInputError(
            f"The kernel size k must be at least 2 (got {k}): a 1-wide kernel never mixes positions."
        )


def kernel_notice(n: int, k: int) -> str:
    """A note when the kernel is wider than the sequence (allowed: the padding fills the rest)."""
    if k > n:
        return (
            f"k = {k} is larger than n = {n}: one convolution already covers the whole sequence, "
            "the rest of the kernel reads zero padding."
        )
    return ""


def formula_depth(kind: str, n: int, k: int) -> int:
    """The book's maximum path length, exactly: depth until every output reads every input it can."""
    if kind == "conv":
        return max(1, math.ceil((n - 1) / (k - 1)))  # O(n/k): each layer reaches k-1 positions further back
    if kind == "dilated":
        depth = 1
        while k**depth < n:  # dilations 1, k, k^2, ...: L layers reach k^L - 1 positions back
            depth += 1
        return depth  # O(log_k n)
    if kind == "rnn":
        return n  # O(n): y_n reads x_1 through n applications of the cell
    return 1  # O(1): every query reads every key


def reachable(kind: str, n: int) -> np.ndarray:
    """Which inputs an output can ever read: all for self-attention, j <= i for the left-to-right stacks."""
    return np.ones((n, n), bool) if kind == "attention" else np.tril(np.ones((n, n), bool))


def dilation(kind: str, layer: int, k: int) -> int:
    """Layer l (from 0) of the dilated stack spaces its taps k^l apart, as WaveNet does."""
    return k**layer if kind == "dilated" else 1


def _layers(kind: str, k: int, depth: int, seed: int) -> nn.ModuleList:
    torch.manual_seed(seed)
    if kind in ("conv", "dilated"):
        convs = (nn.Conv1d(CHANNELS, CHANNELS, k, dilation=dilation(kind, i, k)) for i in range(depth))
        return nn.ModuleList(convs).double()
    if kind == "attention":
        return nn.ModuleList(
            nn.MultiheadAttention(CHANNELS, 1, batch_first=True) for _ in range(depth)
        ).double()
    return nn.ModuleList([nn.GRU(CHANNELS, CHANNELS, batch_first=True)]).double()


def _apply(kind: str, layer: nn.Module, h: torch.Tensor) -> torch.Tensor:
    """One layer on h (n, d); tanh keeps every derivative nonzero (ReLU could zero some by chance)."""
    if kind == "attention":
        return torch.tanh(layer(h[None], h[None], h[None], need_weights=False)[0][0])
    left = layer.dilation[0] * (layer.kernel_size[0] - 1)  # causal: pad the past only
    return torch.tanh(layer(nn.functional.pad(h.T[None], (left, 0)))[0].T)


def _rnn_dependence(gru: nn.GRU, x: torch.Tensor, depth: int, mix: torch.Tensor) -> np.ndarray:
    """bool (depth, n, n): at depth s output i is the GRU run from a zero state over its s latest inputs.

    Each output reads its own window, so one backward pass of the summed read-out gives every
    output's gradient with respect to its window (a vector-Jacobian product per output).
    """
    n, windows, outputs = x.shape[0], [], []
    for s in range(1, depth + 1):
        padded = torch.cat([x.new_zeros(s - 1, x.shape[1]), x])
        window = padded[torch.arange(n)[:, None] + torch.arange(s)[None, :]].detach().requires_grad_()
        windows.append(window)  # (n, s, d)
        outputs.append((gru(window)[0][:, -1] * mix).sum())
    grads = torch.autograd.grad(torch.stack(outputs).sum(), windows)
    grids = np.zeros((depth, n, n), bool)
    for s, grad in enumerate(grads, start=1):
        reads = (grad.abs().sum(-1) > 0).numpy()  # (n, s): output i reads window slot t = x_{i-s+1+t}
        for t in range(s):
            rows = np.arange(n)
            cols = rows - s + 1 + t
            keep = cols >= 0  # slots left of x_1 are zero padding, not inputs
            grids[s - 1, rows[keep], cols[keep]] = reads[keep, t]
    return grids


def _input(n: int, seed: int) -> torch.Tensor:
    return torch.randn(n, CHANNELS, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))


def _pattern(jacobian: torch.Tensor, n: int) -> np.ndarray:
    """(n, n) bool from a Jacobian (n*d, n*d): output i depends on x_j where any channel pair is nonzero."""
    return (jacobian.reshape(n, CHANNELS, n, CHANNELS).abs().sum((1, 3)) > 0).numpy()


def dependence(
    kind: str, n: int, k: int = 3, depth: int = 1, seed: int = 0, direct: bool = False
) -> np.ndarray:
    """bool (depth, n, n): [l, i, j] is True where output i after l+1 layers (steps) depends on x_j.

    Layer stacks multiply each layer's autograd Jacobian at the actual activations (the chain rule,
    exact); ``direct`` differentiates the whole stack at once instead (slower; the tests compare both).
    """
    check(n, k)
    with torch_threads(1):  # tiny operations: more threads only contend
        return _dependence(kind, n, k, depth, seed, direct)


def _dependence(kind: str, n: int, k: int, depth: int, seed: int, direct: bool) -> np.ndarray:
    if kind == "dilated":
        depth = min(depth, _useful_dilated_depth(n, k))
    layers, x = _layers(kind, k, depth, seed), _input(n, seed)
    jacobian = torch.autograd.functional.jacobian
    if kind == "rnn":
        mix = torch.randn(CHANNELS, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 2))
        return _rnn_dependence(layers[0], x, depth, mix)
    if direct:

        def stack(t: torch.Tensor) -> torch.Tensor:
            outputs = []
            for layer in layers:
                t = _apply(kind, layer, t)
                outputs.append(t)
            return torch.stack(outputs)

        jac = jacobian(stack, x, vectorize=True)
        return np.stack([_pattern(j.reshape(n * CHANNELS, -1), n) for j in jac])
    grids, total, h = [], torch.eye(n * CHANNELS, dtype=torch.float64), x
    for layer in layers:
        local = jacobian(lambda t, layer=layer: _apply(kind, layer, t), h, vectorize=True)
        total = local.reshape(n * CHANNELS, n * CHANNELS) @ total
        h = _apply(kind, layer, h).detach()
        grids.append(_pattern(total, n))
    return np.stack(grids)


def _useful_dilated_depth(n: int, k: int) -> int:
    """Layers whose dilation still lands inside the sequence (one more than needed, as a check)."""
    depth = 1
    while k ** (depth - 1) < n:
        depth += 1
    return depth


def cap_depth(kind: str, n: int, k: int) -> int:
    """How deep to build the stack when searching: enough for any stack to reach everything."""
    if kind == "conv":
        return max(1, n - 1)
    if kind == "dilated":
        return _useful_dilated_depth(n, k)
    return n if kind == "rnn" else 2


def path_lengths(kind: str, n: int, k: int = 3, seed: int = 0) -> np.ndarray:
    """int (n, n): the first depth at which output i reads x_j; 0 where it never does."""
    grids = dependence(kind, n, k, cap_depth(kind, n, k), seed)
    first = np.argmax(grids, axis=0) + 1
    return np.where(grids.any(axis=0), first, 0)


def measured_depth(kind: str, n: int, k: int = 3, seed: int = 0) -> int:
    """Measured maximum path length: the depth at which every output reads every input it can."""
    lengths = path_lengths(kind, n, k, seed)
    can = reachable(kind, n)
    if (lengths[can] == 0).any():
        raise RuntimeError(f"{kind}: some output never read an input it should (n={n}, k={k})")
    return int(lengths[can].max())


@dataclass(frozen=True)
class PairStep:
    """Two inputs seen from one depth: the nearest outputs that read each, and the span between them."""

    depth: int
    left: int  # 1-based position of the output nearest to the other input that reads the first one
    right: int
    span: int  # positions from left to right inclusive; 1 means one output reads both


def pair_steps(kind: str, n: int, k: int, first: int, second: int, seed: int = 0) -> list[PairStep]:
    """The book's example (x_1 and x_5 with k = 3): how far apart two inputs are, layer by layer."""
    check(n, k)
    if not 1 <= first < second <= n:
        raise PathInputError(f"Pick two positions 1 <= i < j <= n (got {first} and {second}).")
    steps = [PairStep(0, first, second, second - first + 1)]
    grids = dependence(kind, n, k, cap_depth(kind, n, k), seed)
    for depth, grid in enumerate(grids, start=1):
        readers_a = np.flatnonzero(grid[:, first - 1])
        readers_b = np.flatnonzero(grid[:, second - 1])
        gaps = np.abs(readers_a[:, None] - readers_b[None, :])
        a, b = np.unravel_index(np.argmin(gaps), gaps.shape)
        left, right = sorted((int(readers_a[a]) + 1, int(readers_b[b]) + 1))
        steps.append(PairStep(depth, left, right, right - left + 1))
        if left == right:
            break
    return steps
