"""A TopK sparse autoencoder (Gao et al. 2024, "Scaling and evaluating sparse autoencoders") and its trainer.

Why TopK rather than JumpReLU: the number of active latents per token (L0) is fixed by k, so there
is no sparsity coefficient to tune per model and place (a dictionary trained here for any local
model must work at its first try), JumpReLU's thresholds need a straight-through estimator and a
bandwidth; and with the auxiliary loss (AuxK: the top k_aux latents among those dead for a while
reconstruct the residual error) few latents die. Kept from the paper: decoder rows of unit norm
(renormalised after each step, with the gradient's part along each row removed first), a
pre-encoder bias b_dec subtracted before encoding and added after decoding (initialised to the
data's mean), W_enc initialised as W_dec transposed, Adam, and inputs scaled by one constant so
their mean squared norm is the width (so the learning rate fits any model's scale).

Batches come from a permutation drawn from the seed and the epoch, and every state the next step
reads (weights, Adam's moments and step, each latent's tokens since it last fired) is in the
checkpoint, so a resumed training equals an uninterrupted one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch

from txviz.core.countdown import Progress, remaining

PARAMS = ("W_enc", "b_enc", "W_dec", "b_dec")


@dataclass(frozen=True)
class Settings:
    """How a dictionary is trained; every field is part of its key."""

    expansion: int = 16  # latents = expansion x the place's width
    k: int = 32  # active latents per token
    tokens: int = 16_384  # training tokens (one pass over them)
    batch: int = 512
    lr: float = 4e-4
    aux_k: int = 256  # latents of the auxiliary loss (Gao et al. use d_model / 2)
    aux_coefficient: float = 1 / 32
    dead_after: int = 100_000  # tokens without firing before a latent counts as dead for AuxK
    window: int = 128
    held_out: int = 4_096  # tokens kept apart for the quality measures
    seed: int = 0
    checkpoint_every: int = 50  # steps between checkpoints

    def as_dict(self) -> dict:
        return asdict(self)


def adam_step(
    param: torch.Tensor, grad: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int, lr: float
) -> None:
    """One Adam update in place (beta1 0.9, beta2 0.999, eps 1e-8), written out so its state is plain arrays."""
    m.mul_(0.9).add_(grad, alpha=0.1)
    v.mul_(0.999).addcmul_(grad, grad, value=0.001)
    m_hat = m / (1 - 0.9**t)
    v_hat = v / (1 - 0.999**t)
    param.sub_(lr * m_hat / (v_hat.sqrt() + 1e-8))


class TopKSAE:
    """Encoder, decoder and pre-encoder bias as plain tensors; inputs in the place's own units."""

    def __init__(self, weights: dict[str, torch.Tensor], k: int, scale: float) -> None:
        self.W_enc, self.b_enc = weights["W_enc"], weights["b_enc"]  # (d, m), (m,)
        self.W_dec, self.b_dec = weights["W_dec"], weights["b_dec"]  # (m, d), (d,)
        self.k, self.scale = k, float(scale)

    @classmethod
    def initial(cls, d: int, width: int, k: int, mean: np.ndarray, scale: float, seed: int) -> TopKSAE:
        """Random unit decoder rows, W_enc = W_dec^T, b_dec the (scaled) data mean, b_enc zero."""
        gen = torch.Generator().manual_seed(seed)
        w_dec = torch.randn(width, d, generator=gen)
        w_dec /= w_dec.norm(dim=1, keepdim=True)
        weights = {
            "W_enc": w_dec.T.clone().contiguous(),
            "b_enc": torch.zeros(width),
            "W_dec": w_dec,
            "b_dec": torch.as_tensor(mean, dtype=torch.float32) / scale,
        }
        return cls(weights, k, scale)

    @property
    def width(self) -> int:
        return self.W_dec.shape[0]

    def weights(self) -> dict[str, torch.Tensor]:
        return {"W_enc": self.W_enc, "b_enc": self.b_enc, "W_dec": self.W_dec, "b_dec": self.b_dec}

    def pre_acts(self, x: torch.Tensor) -> torch.Tensor:
        """ReLU((x / scale - b_dec) W_enc + b_enc) for x in the place's units."""
        return torch.relu((x / self.scale - self.b_dec) @ self.W_enc + self.b_enc)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Latent activations (N, m): the k largest pre-activations of each token kept, the rest zero."""
        pre = self.pre_acts(x)
        top = pre.topk(self.k, dim=-1)
        return torch.zeros_like(pre).scatter_(-1, top.indices, top.values)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Back to the place's units: (z W_dec + b_dec) x scale."""
        return (z @ self.W_dec + self.b_dec) * self.scale

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))


def _aux_loss(
    sae: TopKSAE, pre: torch.Tensor, error: torch.Tensor, dead: torch.Tensor, aux_k: int
) -> torch.Tensor:
    """Gao et al.'s AuxK: the dead latents' top aux_k reconstruct the main reconstruction's error."""
    n_dead = int(dead.sum())
    if n_dead == 0:
        return pre.new_zeros(())
    masked = pre.masked_fill(~dead, 0.0)
    top = masked.topk(min(aux_k, n_dead), dim=-1)
    z = torch.zeros_like(pre).scatter_(-1, top.indices, top.values)
    guess = z @ sae.W_dec
    # normalised by the error's own variance so its size does not depend on how good the main fit is
    return ((guess - error) ** 2).sum(-1).mean() / (error**2).sum(-1).mean().clamp_min(1e-12)


@dataclass
class State:
    """Everything a training step reads besides the data: the dictionary, Adam's moments, the clock."""

    sae: TopKSAE
    moments: dict[str, torch.Tensor]  # "m.W_enc", "v.W_enc", ...
    since_fired: torch.Tensor  # (m,) tokens since each latent last fired
    step: int = 0
    seconds: float = 0.0
    last_loss: float = float("nan")

    @classmethod
    def fresh(cls, sae: TopKSAE) -> State:
        moments = {f"{kind}.{n}": torch.zeros_like(p) for n, p in sae.weights().items() for kind in "mv"}
        return cls(sae, moments, torch.zeros(sae.width, dtype=torch.long))

    def arrays(self) -> dict[str, np.ndarray]:
        found = {n: p.numpy() for n, p in self.sae.weights().items()}
        found.update({n: t.numpy() for n, t in self.moments.items()})
        found["since_fired"] = self.since_fired.numpy()
        return found


def steps_of(n_tokens: int, settings: Settings) -> int:
    """Training steps for ``settings.tokens`` tokens in whole batches (past ``n_tokens``, further epochs)."""
    if n_tokens < settings.batch:
        raise ValueError(f"{n_tokens} tokens do not fill one batch of {settings.batch}.")
    return max(1, settings.tokens // settings.batch)


def batch_order(n_tokens: int, settings: Settings, step: int) -> np.ndarray:
    """The rows of step ``step``: a permutation drawn from the seed and the epoch, so any step is found again."""
    per_epoch = n_tokens // settings.batch
    epoch, index = divmod(step, per_epoch)
    order = np.random.default_rng([settings.seed, epoch]).permutation(n_tokens)
    return order[index * settings.batch : (index + 1) * settings.batch]


def train_step(state: State, x: torch.Tensor, settings: Settings) -> float:
    """One step on batch ``x`` (place units): loss, gradients, Adam, decoder rows back to unit norm."""
    sae = state.sae
    params = {n: p.detach().requires_grad_(True) for n, p in sae.weights().items()}
    live = TopKSAE(params, sae.k, sae.scale)
    target = x / sae.scale
    pre = live.pre_acts(x)
    top = pre.topk(sae.k, dim=-1)
    z = torch.zeros_like(pre).scatter(-1, top.indices, top.values)
    recon = z @ live.W_dec + live.b_dec
    error = target - recon
    mse = (error**2).sum(-1).mean() / ((target - target.mean(0)) ** 2).sum(-1).mean().clamp_min(1e-12)
    dead = state.since_fired >= settings.dead_after
    loss = mse + settings.aux_coefficient * _aux_loss(live, pre, error.detach(), dead, settings.aux_k)
    loss.backward()
    state.step += 1
    with torch.no_grad():
        grad_dec = params["W_dec"].grad
        # the part of each row's gradient along the row only changes its norm, which is reset anyway
        grad_dec -= (grad_dec * params["W_dec"]).sum(1, keepdim=True) * params["W_dec"]
        new = {}
        for name, p in params.items():
            value = p.detach().clone()
            adam_step(
                value, p.grad, state.moments[f"m.{name}"], state.moments[f"v.{name}"], state.step, settings.lr
            )
            new[name] = value
        new["W_dec"] /= new["W_dec"].norm(dim=1, keepdim=True).clamp_min(1e-12)
        state.sae = TopKSAE(new, sae.k, sae.scale)
        fired = torch.zeros(sae.width, dtype=torch.bool)
        fired[top.indices[top.values > 0].unique()] = True
        state.since_fired = torch.where(fired, 0, state.since_fired + x.shape[0])
    state.last_loss = float(mse.detach())
    return state.last_loss


def start_state(data: np.ndarray, settings: Settings) -> State:
    """A fresh dictionary for ``data`` (N, d): its scale and mean from the data, its seed from the settings."""
    d = data.shape[1]
    scale = math.sqrt(float((data.astype(np.float64) ** 2).sum(1).mean()) / d) or 1.0
    sae = TopKSAE.initial(d, settings.expansion * d, settings.k, data.mean(0), scale, settings.seed)
    return State.fresh(sae)


def train(
    data: np.ndarray,
    settings: Settings,
    state: State | None = None,
    progress: Progress | None = None,
    checkpoint: Callable[[State, int], None] | None = None,
    stop_after: int | None = None,
) -> State:
    """Train on ``data`` (N, d) from ``state`` (fresh when None) to ``steps_of`` steps, checkpointing."""
    # checkpoint(state, total) runs every settings.checkpoint_every steps and at the end; stop_after
    # ends early after that many steps, the interruption a test makes
    state = state or start_state(data, settings)
    total = steps_of(len(data), settings)
    began, done_before, seconds_before = time.perf_counter(), state.step, state.seconds
    tensor = torch.from_numpy(np.ascontiguousarray(data, dtype=np.float32))
    while state.step < total:
        if stop_after is not None and state.step >= stop_after:
            return state
        rows = torch.from_numpy(batch_order(len(data), settings, state.step))
        train_step(state, tensor[rows], settings)
        elapsed = time.perf_counter() - began
        state.seconds = seconds_before + elapsed  # in every checkpoint, so a stored dictionary says its time
        if progress:
            progress(
                state.step / total,
                f"step {state.step:,} of {total:,}, loss {state.last_loss:.3f}; "
                f"{remaining(state.step - done_before, total - done_before, elapsed)}",
            )
        if checkpoint and (state.step % settings.checkpoint_every == 0 or state.step == total):
            checkpoint(state, total)
    return state
