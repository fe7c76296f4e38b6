"""Pure torch maths of attention: scores into weights, and the masks that shape them."""

from __future__ import annotations

from collections.abc import Callable

import torch

Normalizer = Callable[[torch.Tensor], torch.Tensor]  # masked scores (..., K) -> weights (..., K)


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over keys; a fully masked row (all -inf) gives zeros, not NaN."""
    weights = torch.softmax(scores.float(), dim=-1)
    if weights.requires_grad:  # autograd forbids the in-place form
        return torch.nan_to_num(weights, nan=0.0)
    return weights.nan_to_num_(nan=0.0)  # in place: this runs on every layer's full (B, H, Q, K)


def temperature_softmax(temperature: float) -> Normalizer:
    """Softmax of scores / temperature: below 1 sharpens, above 1 flattens."""
    if temperature <= 0:
        raise ValueError("Temperature must be positive; use hard attention for the limit at 0.")
    return lambda scores: softmax(scores / temperature)


def hard(scores: torch.Tensor) -> torch.Tensor:
    """One-hot rows at the highest score (argmax attention)."""
    index = scores.argmax(dim=-1, keepdim=True)
    weights = torch.zeros_like(scores, dtype=torch.float32).scatter_(-1, index, 1.0)
    return torch.where(torch.isinf(scores).all(dim=-1, keepdim=True), 0.0, weights)


def top_k(k: int) -> Normalizer:
    """Softmax over the k highest scores of each row, zero elsewhere."""
    if k < 1:
        raise ValueError("Top-k needs k of at least 1.")

    def normalize(scores: torch.Tensor) -> torch.Tensor:
        kk = min(k, scores.shape[-1])
        threshold = scores.topk(kk, dim=-1).values[..., -1:]
        return softmax(scores.masked_fill(scores < threshold, float("-inf")))

    return normalize


def sparsemax(scores: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of each row onto the simplex (Martins and Astudillo 2016)."""
    z = torch.nan_to_num(scores.float(), neginf=-1e9)
    z_sorted, _ = z.sort(dim=-1, descending=True)
    cumsum = z_sorted.cumsum(dim=-1)
    k = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    support = (1 + k * z_sorted) > cumsum  # (..., K) True while inside the support
    k_max = support.sum(dim=-1, keepdim=True)
    tau = (cumsum.gather(-1, k_max - 1) - 1) / k_max
    return torch.clamp(z - tau, min=0.0)


def causal_mask(n_query: int, n_key: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Bool (Q, K), True where allowed; the last query sees every key (cache-aligned)."""
    offset = n_key - n_query
    q = torch.arange(n_query, device=device)[:, None]
    k = torch.arange(n_key, device=device)[None, :]
    return k <= q + offset


# p log p -> 0 as p -> 0, but log(0) = -inf and 0 * -inf = NaN: logs are taken of max(p, floor). A weight
# below the floor adds at most 1e-12 * 27.7 = 3e-11 nats, far below what any figure or test resolves.
ENTROPY_FLOOR = 1e-12


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats of each row (last axis) of weights; one-hot and all-zero rows give 0.

    The one entropy of txviz: heads, traces and training curves all call it. float64 stays float64.
    """
    w = weights.to(torch.promote_types(weights.dtype, torch.float32))
    return -(w * w.clamp_min(ENTROPY_FLOOR).log()).sum(dim=-1)
