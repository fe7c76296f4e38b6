"""One atlas build's running sums and top contexts, folded batch by batch from the reductions' results."""

from __future__ import annotations

import numpy as np
import torch

from txviz.atlas.atlas import CRITERIA, Contexts, Settings
from txviz.atlas.topk import Running
from txviz.core.capture import AttentionRecord
from txviz.models import LoadedModel

# The target metrics, in the order of the fold's feature columns; then |q - k| and 1 (the row's total).
TARGETS = ("previous_token", "first_token", "punctuation", "duplicate_token", "induction", "local")
DISTANCE, TOTAL = len(TARGETS), len(TARGETS) + 1


class Scan:
    """Per-head sums of each metric's per-row values, and each criterion's running top-k and bands."""

    def __init__(self, loaded: LoadedModel, settings: Settings, window: int, grams: torch.Tensor | None):
        shape = (loaded.n_layers, loaded.n_heads)
        self.causal, self.sink, self.window, self.grams = loaded.is_causal, settings.sink, window, grams
        self.shares = torch.zeros(*shape, len(TARGETS), dtype=torch.float64)
        self.counts = torch.zeros(len(TARGETS), dtype=torch.int64)
        self.distance = torch.zeros(shape, dtype=torch.float64)
        self.entropy = torch.zeros(shape, dtype=torch.float64)
        self.rows = 0
        self.running = {
            c: Running(shape, settings.top_k, settings.deciles, settings.per_decile, settings.seed + i)
            for i, c in enumerate(CRITERIA)
        }

    def add(self, records: list[AttentionRecord], rows: torch.Tensor, index: torch.Tensor) -> None:
        """Fold one batch: each layer's record (its reduction's blocks and head outputs), the rows where
        each target is measurable (B, T, len(TARGETS)) and the windows' indices (B,)."""
        states = [r.reduced for r in records]  # per layer: the fold's sums and rows' maxima
        self.shares += torch.stack([s["shares"] for s in states]).cpu().double()
        self.counts += rows.sum((0, 1))
        self.distance += torch.stack([s["distance"] for s in states]).cpu().double()
        self.entropy += torch.stack([s["entropy"] for s in states]).cpu().double()
        best = torch.stack([torch.cat(s["best"], dim=2) for s in states]).cpu()  # (L, B, H, T)
        key = torch.stack([torch.cat(s["key"], dim=2) for s in states]).cpu()
        b, n = rows.shape[:2]
        self.rows += b * n
        place = (index[:, None] * self.window + torch.arange(n)).reshape(-1)
        seen = ~(self.causal & (torch.arange(n) < self.sink))  # causal rows before the sinks see no other key
        best = torch.where(seen, best, -torch.inf)
        key = torch.where(seen, key, -1)
        flat = lambda x: x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)  # noqa: E731  (L, H, B*T)
        key = flat(key.to(torch.int32))
        norms = torch.stack([self._norm(r.head_out, i) for i, r in enumerate(records)]).cpu()
        norms = torch.where(seen, norms, -torch.inf)  # a sink's own row: the same output in every window
        self.running["attention"].add(flat(best), place, key)
        self.running["output"].add(flat(norms), place, key)  # the same keys: stored once

    def _norm(self, heads: torch.Tensor, layer: int) -> torch.Tensor:
        """(B, H, T) norm of each head's output: through the output projection where it is known."""
        if self.grams is None:
            return heads.norm(dim=-1)
        gram = self.grams[layer].to(heads.device, heads.dtype)
        squared = torch.einsum("bhtd,hde,bhte->bht", heads, gram, heads)
        return squared.clamp_min(0).sqrt()

    def scores(self) -> dict[str, np.ndarray]:
        """Metric name -> float32 [layer, head]: target shares averaged over their rows (NaN where no row
        qualified), mean distance and entropy over every row."""
        out = {}
        for m, name in enumerate(TARGETS):
            count = int(self.counts[m])
            mean = (
                (self.shares[..., m] / count).clamp(0, 1)
                if count
                else torch.full(self.shares.shape[:2], torch.nan)
            )
            out[name] = mean.numpy().astype(np.float32)
        out["distance"] = (self.distance / max(self.rows, 1)).numpy().astype(np.float32)
        out["entropy"] = (self.entropy / max(self.rows, 1)).numpy().astype(np.float32)
        return out

    def contexts(self) -> dict[str, Contexts]:
        return {c: r.contexts(c, self.window) for c, r in self.running.items()}
