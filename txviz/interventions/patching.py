"""Activation patching (Meng et al. 2022; Wang et al. 2022) and its gradient estimate, attribution
patching (Nanda 2023; Syed et al. 2023).

Exact: run the corrupted prompt with one activation taken from the clean run - the residual stream
at one (layer, position), one head's output, one MLP's output - and read how much of the metric
comes back: 0 is the corrupted value, 1 the clean one. Every cell is one batch row.

Attribution: one forward of the clean and the corrupted prompt side by side and one backward from
the corrupted metric give every cell at once to first order, gradient x (clean - corrupted activation). The
gradients come from zero steering vectors added at every point: d metric / d vector is
d metric / d activation, and adding zero changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import spearmanr

from txviz.core.edits import Patch, Steer
from txviz.core.errors import UserError
from txviz.interventions.ablation import batched_metrics
from txviz.interventions.metrics import Metric, recovered
from txviz.interventions.runs import forward, prompt_ids, tokens_of, unplaced
from txviz.models import LoadedModel

PATCH_BATCH = 32  # rows per forward: one residual layer of a 32-token prompt


def paired_ids(loaded: LoadedModel, clean: str, corrupt: str) -> tuple[list[int], list[int]]:
    """Both prompts' ids; a clear error unless they have the same number of tokens."""
    a, b = prompt_ids(loaded, clean, "clean prompt"), prompt_ids(loaded, corrupt, "corrupted prompt")
    if len(a) != len(b):
        raise UserError(
            f"The clean prompt has {len(a)} tokens and the corrupted one {len(b)}: patching swaps "
            "activations position by position, so they must have the same number of tokens. Change "
            "one word for another that is also one token (e.g. a name for a name)."
        )
    if a == b:
        raise UserError("The clean and corrupted prompts are the same: change a word in the corrupted one.")
    return a, b


def stream_point(row: int) -> tuple[str, int]:
    """Row 0 of the residual grid is the embeddings, row r the stream after block r - 1."""
    return ("embed", 0) if row == 0 else ("resid", row - 1)


def row_names(n_layers: int) -> list[str]:
    return ["embeddings"] + [f"after {i}" for i in range(n_layers)]


@dataclass(frozen=True, eq=False)
class Activations:
    """What the clean and corrupted runs computed at every point, and the corrupted metric's gradients."""

    clean_value: float
    corrupt_value: float
    streams: tuple[np.ndarray, np.ndarray]  # clean, corrupt: (L + 1, T, D), row 0 the embeddings
    heads: tuple[np.ndarray, np.ndarray]  # (L, H, T, D_head)
    ffn: tuple[np.ndarray, np.ndarray]  # (L, T, D)
    stream_grad: np.ndarray  # (L + 1, T, D)
    head_grad: np.ndarray  # (L, H, T, D_head)
    ffn_grad: np.ndarray  # (L, T, D)
    ffn_missing: str = ""  # why the MLPs are NaN: txviz cannot place what this model's FFN adds


def _stacked(tensors: list[torch.Tensor]) -> np.ndarray:
    return torch.stack(tensors).detach().float().cpu().numpy()


def _recorded(result, n_layers: int, ffns: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(streams (L + 1, B, T, D), heads (L, B, H, T, D_head), MLPs (L, B, T, D)) of a run, every row;
    the MLPs NaN when they were not recorded."""
    streams = _stacked([result.stage_output(*stream_point(r)) for r in range(n_layers + 1)])
    heads = _stacked([result.head_output(la) for la in range(n_layers)])
    if not ffns:
        return streams, heads, np.full((n_layers, *streams.shape[1:]), np.nan, np.float32)
    ffn = _stacked([result.stage_output("ffn", la) for la in range(n_layers)])
    return streams, heads, ffn


def activations(loaded: LoadedModel, clean: list[int], corrupt: list[int], metric: Metric) -> Activations:
    """Every point of the clean and the corrupted run, and one backward from the corrupted metric.

    One pass of two rows (clean, corrupted) rather than two of one: rows never mix, so the gradient
    is the corrupted row's alone, and on a CPU a two-row pass with its backward costs about a
    seventh less than a one-row pass plus a one-row pass with its backward (SmolLM2, 32 tokens,
    1 thread: 283 ms against 329 ms). One zero vector per layer covers all its heads: per-head
    vectors cost 29 ms of a 326 ms pass.

    Only the points this model places are asked for: where txviz cannot place what the FFN adds
    (a model placed by discovery) the MLPs are NaN and ``ffn_missing`` says why.
    """
    n_layers, n_heads, n = loaded.n_layers, loaded.n_heads, len(clean)
    width = loaded.config.hidden_size
    head_width = getattr(loaded.config, "head_dim", None) or width // n_heads
    zeros = lambda *shape: torch.zeros(*shape, device=loaded.device, requires_grad=True)  # noqa: E731
    stream_vectors = [zeros(n, width) for _ in range(n_layers + 1)]
    head_vectors = [zeros(n, n_heads, head_width) for _ in range(n_layers)]
    missing = unplaced(loaded, "ffn")
    ffn_vectors = [] if missing else [zeros(n, width) for _ in range(n_layers)]
    steers = [Steer(*stream_point(r), vector=v) for r, v in enumerate(stream_vectors)]
    steers += [Steer("ffn", la, vector=v) for la, v in enumerate(ffn_vectors)]
    steers += [Steer("head_out", la, vector=v) for la, v in enumerate(head_vectors)]
    record, stages = frozenset({"head_out"}), frozenset({"embed", "resid"} | (set() if missing else {"ffn"}))
    both = forward(loaded, torch.tensor([clean, corrupt]), steers, record=record, stages=stages, grad=True)
    values = metric(both.logits[:, -1])
    grads = list(torch.autograd.grad(values[1], stream_vectors + ffn_vectors + head_vectors))
    if missing:  # NaN gradients stand in for the FFNs' own
        grads[n_layers + 1 : n_layers + 1] = [torch.full((n, width), float("nan"))] * n_layers
    streams, heads, ffn = _recorded(both, n_layers, not missing)  # row 0 clean, row 1 corrupted
    return Activations(
        clean_value=float(values[0].detach()),
        corrupt_value=float(values[1].detach()),
        streams=(streams[:, 0], streams[:, 1]),
        heads=(heads[:, 0], heads[:, 1]),
        ffn=(ffn[:, 0], ffn[:, 1]),
        stream_grad=_stacked(grads[: n_layers + 1]),
        head_grad=_stacked(grads[2 * n_layers + 1 :]).transpose(0, 2, 1, 3),  # (L, H, T, D_head)
        ffn_grad=_stacked(grads[n_layers + 1 : 2 * n_layers + 1]),
        ffn_missing=missing,
    )


@dataclass(frozen=True, eq=False)
class Attribution:
    """The first-order estimate of every patching cell, in recovered fraction."""

    residual: np.ndarray  # (L + 1, T)
    heads: np.ndarray  # (L, H)
    ffn: np.ndarray  # (L,)


def attribution(acts: Activations) -> Attribution:
    """gradient x (clean - corrupted), summed over each cell's activation, over the metric's gap."""
    gap = acts.clean_value - acts.corrupt_value
    recovered(acts.clean_value, acts.clean_value, acts.corrupt_value)  # refuses a zero gap
    stream = (acts.stream_grad * (acts.streams[0] - acts.streams[1])).sum(-1)
    heads = (acts.head_grad * (acts.heads[0] - acts.heads[1])).sum((-1, -2))
    ffn = (acts.ffn_grad * (acts.ffn[0] - acts.ffn[1])).sum((-1, -2))
    return Attribution(*(np.float32(x / gap) for x in (stream, heads, ffn)))


def rank_correlation(exact: np.ndarray, estimate: np.ndarray) -> float:
    """Spearman's rank correlation of two grids (NaN when either is constant)."""
    # Rounded: cells that are 0 in both (positions before the changed token) come out of batched
    # float32 runs as +-1e-7, and ranking that noise would make the correlation a coin toss.
    exact, estimate = np.round(np.ravel(exact), 4), np.round(np.ravel(estimate), 4)
    if np.ptp(exact) == 0 or np.ptp(estimate) == 0:
        return float("nan")
    return float(spearmanr(exact, estimate).statistic)


@dataclass(frozen=True, eq=False)
class PatchResult:
    """Exact and estimated recovered fractions of every patching cell."""

    tokens: tuple[str, ...]
    metric: Metric
    clean_value: float
    corrupt_value: float
    residual: np.ndarray  # (L + 1, T) exact
    heads: np.ndarray  # (L, H) exact
    ffn: np.ndarray  # (L,) exact; NaN where txviz cannot place what the FFN adds
    estimate: Attribution
    seconds: float
    notice: str = ""  # why the MLPs were not patched

    @property
    def residual_rho(self) -> float:
        return rank_correlation(self.residual, self.estimate.residual)

    @property
    def heads_rho(self) -> float:
        return rank_correlation(self.heads, self.estimate.heads)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "residual": self.residual,
            "heads": self.heads,
            "ffn": self.ffn,
            "residual_attribution": self.estimate.residual,
            "heads_attribution": self.estimate.heads,
            "ffn_attribution": self.estimate.ffn,
            "tokens": np.array(self.tokens),
            "clean": np.float32(self.clean_value),
            "corrupt": np.float32(self.corrupt_value),
        }


def patch_jobs(acts: Activations, n_layers: int, n_heads: int, n_tokens: int) -> dict[str, list]:
    """The interventions of every exact cell: clean values patched into the corrupted run."""
    clean_streams, clean_heads, clean_ffn = acts.streams[0], acts.heads[0], acts.ffn[0]
    residual = [
        [Patch(*stream_point(r), positions=[p], value=torch.from_numpy(clean_streams[r]))]
        for r in range(n_layers + 1)
        for p in range(n_tokens)
    ]
    heads = [
        [Patch("head_out", la, h, value=torch.from_numpy(clean_heads[la, h]))]
        for la in range(n_layers)
        for h in range(n_heads)
    ]
    ffn = (
        []
        if acts.ffn_missing
        else [[Patch("ffn", la, value=torch.from_numpy(clean_ffn[la]))] for la in range(n_layers)]
    )
    return {"residual": residual, "heads": heads, "ffn": ffn}


def patch(
    loaded: LoadedModel,
    clean: str,
    corrupt: str,
    metric: Metric,
    batch_size: int = PATCH_BATCH,
    progress: Callable[[float], object] | None = None,
) -> PatchResult:
    """Every residual (layer, position), head and MLP patched from clean into corrupted, and the estimate."""
    start = time.perf_counter()
    clean_ids, corrupt_ids = paired_ids(loaded, clean, corrupt)
    n_layers, n_heads, n = loaded.n_layers, loaded.n_heads, len(clean_ids)
    acts = activations(loaded, clean_ids, corrupt_ids, metric)
    estimate = attribution(acts)  # also refuses prompts that give the same metric
    jobs = patch_jobs(acts, n_layers, n_heads, n)
    every = jobs["residual"] + jobs["heads"] + jobs["ffn"]
    values = batched_metrics(loaded, corrupt_ids, metric, every, batch_size, progress)
    fractions = recovered(values, acts.clean_value, acts.corrupt_value).astype(np.float32)
    if acts.ffn_missing:
        fractions = np.concatenate([fractions, np.full(n_layers, np.nan, np.float32)])
    n_res, n_head = (n_layers + 1) * n, n_layers * n_heads
    return PatchResult(
        tokens=tokens_of(loaded, corrupt_ids),
        metric=metric,
        clean_value=acts.clean_value,
        corrupt_value=acts.corrupt_value,
        residual=fractions[:n_res].reshape(n_layers + 1, n),
        heads=fractions[n_res : n_res + n_head].reshape(n_layers, n_heads),
        ffn=fractions[n_res + n_head :],
        estimate=estimate,
        seconds=time.perf_counter() - start,
        notice=f"The MLPs are not patched: {acts.ffn_missing}" if acts.ffn_missing else "",
    )
