"""FLOATER (Liu et al. 2020): positions as the solution of a neural ODE, beside an RNN's and the sinusoid.

FLOATER lets the position vector flow along a learned vector field, dp/dt = h(t, p; θ), and reads
position i at t = i: any length can be integrated (inductive), θ is learned (data-driven) and its size
does not grow with the length (parameter-efficient). The sinusoid is one such flow: each (sin, cos)
pair of frequency ω solves the linear ODE d/dt (s, c) = ω (c, −s). An RNN run on no input,
p_i = tanh(W p_(i−1) + u), is the discrete relative: one step per position instead of a continuous flow.

FLOATER can start from the sinusoid; here the field is the sinusoid's rotations plus a random learned
part h of chosen strength (0 gives the sinusoid exactly). h and the RNN are random (a stated seed), not
trained: the matrices show the form, not what a trained FLOATER learns. The ODE is integrated by
exponential Euler steps, several per position: the rotations exactly, the learned part by Euler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from txviz.positional.encodings import frequencies, sinusoidal_encoding

HIDDEN = 16  # width of the vector field's hidden layer
SUBSTEPS = 20  # Euler steps per unit of position
STRENGTH = 0.05  # the learned part's default weight: a random field's push adds up along slow columns

Field = Callable[[float, np.ndarray], np.ndarray]  # h(t, p) -> dp/dt

# Liu et al. 2020, Table 1 (the Toronto slides show it), with rotary added by us: RoPE (Su et al. 2021)
# came after the paper. Inductive: runs at lengths not seen in training; data-driven: learned from the
# data; parameter-efficient: its parameters do not grow with the longest sequence.
COMPARISON = (
    {"method": "sinusoidal (Vaswani et al. 2017)", "inductive": "✓", "data-driven": "✗", "parameter-efficient": "✓"},
    {"method": "learned (BERT, Devlin et al. 2019)", "inductive": "✗", "data-driven": "✓", "parameter-efficient": "✗"},
    {"method": "relative (Shaw et al. 2018)", "inductive": "✗", "data-driven": "✓", "parameter-efficient": "✓"},
    {"method": "rotary (Su et al. 2021; our row)", "inductive": "✓", "data-driven": "✗", "parameter-efficient": "✓"},
    {"method": "FLOATER (Liu et al. 2020)", "inductive": "✓", "data-driven": "✓", "parameter-efficient": "✓"},
)  # fmt: skip


@dataclass(frozen=True)
class NeuralField:
    """h(t, p) = tanh(W2 tanh(W1 p + w_t t + b1) + b2): a one-hidden-layer field, each entry in (−1, 1)."""

    w1: np.ndarray  # (HIDDEN, d)
    w_t: np.ndarray  # (HIDDEN,)
    b1: np.ndarray  # (HIDDEN,)
    w2: np.ndarray  # (d, HIDDEN)
    b2: np.ndarray  # (d,)

    def __call__(self, t: float, p: np.ndarray) -> np.ndarray:
        return np.tanh(self.w2 @ np.tanh(self.w1 @ p + self.w_t * t + self.b1) + self.b2)

    @property
    def parameters(self) -> int:
        return sum(a.size for a in (self.w1, self.w_t, self.b1, self.w2, self.b2))


def neural_field(d: int, seed: int = 0, hidden: int = HIDDEN) -> NeuralField:
    """A seeded random field on d + d % 2 dimensions, weights N(0, 1/fan-in); time enters slowly."""
    d += d % 2  # an odd d is integrated with its last sine's cosine partner
    rng = np.random.default_rng(seed)
    return NeuralField(
        w1=rng.normal(scale=1 / np.sqrt(d), size=(hidden, d)),
        w_t=rng.normal(scale=0.05, size=hidden),
        b1=rng.normal(scale=0.5, size=hidden),
        w2=rng.normal(scale=1 / np.sqrt(hidden), size=(d, hidden)),
        b2=rng.normal(scale=0.1, size=d),
    )


def rotate(p: np.ndarray, omega: np.ndarray, angle_scale: float) -> np.ndarray:
    """Turn each (sin, cos) pair by ω·δ: the exact flow of d/dt (s, c) = ω (c, −s) over time δ."""
    s, c = p[0::2], p[1::2]
    cos, sin = np.cos(omega * angle_scale), np.sin(omega * angle_scale)
    out = np.empty_like(p)
    out[0::2], out[1::2] = s * cos + c * sin, c * cos - s * sin
    return out


def start(d: int) -> np.ndarray:
    """p(0): the sinusoid's position 0 (sines 0, cosines 1), as FLOATER can start from it."""
    return sinusoidal_encoding(1, d + d % 2)[0]


def ode_positions(
    n: int,
    d: int,
    field: Field | None,
    strength: float = 0.0,
    base: float = 10000.0,
    substeps: int = SUBSTEPS,
) -> np.ndarray:
    """p(0) .. p(n − 1) of dp/dt = A p + strength · h(t, p), A the sinusoid's rotations; (n, d).

    Exponential Euler steps of δ = 1 / substeps: p ← rotate(p, ωδ) + δ · strength · h(t, p). The
    rotation is exact, so strength 0 gives the sinusoid itself; the learned part is an Euler step.
    An odd d is integrated with its last sine's cosine partner, then that column is dropped.
    """
    width = d + d % 2
    omega = frequencies(d, base)
    delta = 1.0 / substeps
    p = start(d)
    out = np.empty((n, width))
    for i in range(n):
        out[i] = p
        for k in range(substeps):
            push = delta * strength * field(i + k * delta, p) if field is not None and strength else 0.0
            p = rotate(p, omega, delta) + push
    return out[:, :d]


@dataclass(frozen=True)
class Recurrence:
    """A random RNN run on no input: its weights and the positions it produces."""

    w: np.ndarray  # (d, d)
    u: np.ndarray  # (d,)
    positions: np.ndarray  # (n, d)


def rnn_positions(n: int, d: int, seed: int = 0, gain: float = 1.5) -> Recurrence:
    """p_0 = 0, p_i = tanh(W p_(i−1) + u), W ~ N(0, gain² / d): gain > 1 keeps it from settling at once."""
    rng = np.random.default_rng(seed)
    w = rng.normal(scale=gain / np.sqrt(d), size=(d, d))
    u = rng.normal(scale=0.5, size=d)
    positions = np.zeros((n, d))
    for i in range(1, n):
        positions[i] = np.tanh(w @ positions[i - 1] + u)
    return Recurrence(w, u, positions)


def step_sizes(positions: np.ndarray) -> np.ndarray:
    """Largest change of any entry from position i to i + 1; (n − 1,)."""
    return np.abs(np.diff(positions, axis=0)).max(axis=1)
