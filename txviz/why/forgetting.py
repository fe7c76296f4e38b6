"""How much an RNN's last output still depends on an input k steps back, beside self-attention.

The GRU and the attention layer are the Path length view's own (paths._layers, float64, seeded).
|| d y_n / d x_(n-k) || is read from the autograd Jacobian of the last output with respect to the
whole input: through the GRU it is a product of k step Jacobians and shrinks about geometrically
with k; through one attention layer every input sits one step away, so it has no trend with k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.threads import torch_threads
from txviz.why import paths

MAX_STEPS = 64


def last_output(kind: str, layer: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """y_n (d,): the GRU's last state from a zero start, or one attention layer's last output."""
    if kind == "rnn":
        return layer(x[None])[0][0, -1]
    return paths._apply("attention", layer, x)[-1]


def jacobian_norms(kind: str, layer: torch.nn.Module, x: torch.Tensor) -> np.ndarray:
    """(n,) Frobenius norm of d y_n / d x_(n-k) for k = 0 .. n-1 (k = 0 is the newest input)."""
    jac = torch.autograd.functional.jacobian(lambda t: last_output(kind, layer, t), x)  # (d, n, d)
    return jac.pow(2).sum((0, 2)).sqrt().flip(0).numpy()


@dataclass(frozen=True)
class Forgetting:
    """Jacobian norms against distance, geometric means over several random inputs."""

    distances: np.ndarray  # (n,) k = 0 .. n-1
    rnn: np.ndarray  # (n,)
    attention: np.ndarray  # (n,)
    decay_per_step: float  # the GRU's norm is multiplied by this per step back (fitted, k >= 1)

    @property
    def half_life(self) -> float:
        """Steps back over which the GRU's dependence halves."""
        return float(np.log(0.5) / np.log(self.decay_per_step)) if self.decay_per_step < 1 else float("inf")


def forgetting(n: int = 32, seed: int = 0, inputs: int = 8) -> Forgetting:
    """The GRU's and attention's dependence on x_(n-k), k = 0 .. n-1, over `inputs` random sequences."""
    if not 2 <= n <= MAX_STEPS:
        raise paths.PathInputError(f"Pick between 2 and {MAX_STEPS} steps (got {n}).")
    with torch_threads(1):  # tiny operations: more threads only contend
        gru = paths._layers("rnn", 3, 1, seed)[0]
        attention = paths._layers("attention", 3, 1, seed)[0]
        xs = [paths._input(n, seed + i) for i in range(inputs)]
        rnn = np.exp(np.mean([np.log(jacobian_norms("rnn", gru, x)) for x in xs], axis=0))
        att = np.exp(np.mean([np.log(jacobian_norms("attention", attention, x)) for x in xs], axis=0))
    distances = np.arange(n)
    slope = np.polyfit(distances[1:], np.log(rnn[1:]), 1)[0] if n > 2 else np.log(rnn[1] / rnn[0])
    return Forgetting(distances, rnn, att, float(np.exp(slope)))
