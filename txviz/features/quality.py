"""A dictionary's quality measured on held-out activations, independent of the trainer's own numbers.

Reconstruction: fraction of variance explained, 1 - sum ||x - x_hat||^2 / sum ||x - mean(x)||^2.
Sparsity: the mean number of active latents per token (L0) and the latents never active on the
held-out set (dead). The language-model loss: the next-token cross-entropy with the
reconstruction spliced in at the place (a front-door ``Patch``), against the clean loss and
against zero ablation (an ``Ablate`` there); loss recovered = (zero - spliced) / (zero - clean).
Position 0 keeps its clean value in all three: the dictionary never saw the fixed first token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from txviz.core.capture import CaptureSettings
from txviz.core.running import run
from txviz.features.activations import Place, recorded, recording, splice_edit
from txviz.features.sae import TopKSAE
from txviz.models import LoadedModel

Reconstruct = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Reconstruction:
    """Reconstruction and sparsity on held-out tokens."""

    fve: float
    l0: float
    dead: int
    width: int
    tokens: int


@dataclass(frozen=True)
class Losses:
    """Next-token cross-entropy (nats per token) clean, with the reconstruction spliced in, and zeroed."""

    clean: float
    spliced: float
    zero: float
    tokens: int

    @property
    def recovered(self) -> float:
        """(zero - spliced) / (zero - clean): 1 when splicing costs nothing, 0 when it is as bad as zeros."""
        gap = self.zero - self.clean
        return float("nan") if gap == 0 else (self.zero - self.spliced) / gap


def measured(held: np.ndarray, rebuilt: np.ndarray, l0: np.ndarray, active: np.ndarray) -> Reconstruction:
    """FVE, L0 and dead latents from ``held`` (N, d), its reconstruction, per-token L0 and ever-active latents."""
    # arrays, not a dictionary object: another library's dictionary is measured by the same formula
    x = held.astype(np.float64)
    error = float(((x - rebuilt.astype(np.float64)) ** 2).sum())
    total = float(((x - x.mean(0)) ** 2).sum())
    return Reconstruction(
        fve=1.0 - error / total if total else float("nan"),
        l0=float(np.mean(l0)) if len(l0) else 0.0,
        dead=int((~active.astype(bool)).sum()),
        width=len(active),
        tokens=len(held),
    )


def reconstruction(sae: TopKSAE, held: np.ndarray, batch: int = 2048) -> Reconstruction:
    """FVE, mean L0 and dead latents of ``sae`` on ``held`` (N, d)."""
    rebuilt, l0 = np.empty_like(held, dtype=np.float32), np.zeros(len(held), dtype=np.int64)
    active = np.zeros(sae.width, dtype=bool)
    with torch.no_grad():
        for start in range(0, len(held), batch):
            z = sae.encode(torch.from_numpy(held[start : start + batch].astype(np.float32)))
            rebuilt[start : start + batch] = sae.decode(z).numpy()
            on = (z > 0).numpy()
            l0[start : start + batch] = on.sum(1)
            active |= on.any(0)
    return measured(held, rebuilt, l0, active)


def _loss(logits: torch.Tensor, ids: torch.Tensor) -> tuple[float, int]:
    """Summed next-token cross-entropy and the number of predictions."""
    flat = logits[:, :-1].reshape(-1, logits.shape[-1]).float()
    targets = ids[:, 1:].reshape(-1).to(flat.device)
    return float(F.cross_entropy(flat, targets, reduction="sum")), int(targets.numel())


def losses(
    loaded: LoadedModel, place: Place, ids: np.ndarray, reconstruct: Reconstruct, batch: int = 4
) -> Losses:
    """Clean, spliced and zero-ablated loss over windows ``ids`` (W, T); ``reconstruct``: (N, width) -> same."""
    sums = {"clean": 0.0, "spliced": 0.0, "zero": 0.0}
    count = 0
    heads = loaded.n_heads
    for start in range(0, len(ids), batch):
        x = torch.from_numpy(ids[start : start + batch]).to(loaded.device)
        clean = run(loaded.model, recording(place), ("logits",), input_ids=x)
        value = recorded(clean, place)  # (B, T, width)
        with torch.no_grad():
            rebuilt = reconstruct(value.reshape(-1, value.shape[-1])).reshape(value.shape)
        n = x.shape[1]
        spliced = run(
            loaded.model, CaptureSettings(interventions=(splice_edit(place, rebuilt, n, heads),)), ("logits",),
            input_ids=x,
        )  # fmt: skip
        zero = run(
            loaded.model, CaptureSettings(interventions=(splice_edit(place, None, n, heads),)), ("logits",),
            input_ids=x,
        )  # fmt: skip
        for name, result in (("clean", clean), ("spliced", spliced), ("zero", zero)):
            total, tokens = _loss(result.logits, x)
            sums[name] += total
        count += tokens
    return Losses(sums["clean"] / count, sums["spliced"] / count, sums["zero"] / count, count)
