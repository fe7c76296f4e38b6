"""Ablations: take a head, an MLP or an attention edge away and see what the metric does.

A head or MLP is zeroed, set to its mean over a reference text, or resampled (set to what it
computed on another prompt at the same positions). A sweep runs every head and MLP ablated alone
as batches of one ablation per row (``rows=`` of txviz.core.edits), so it costs about as
many plain forwards batched the same way.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import torch

from txviz.core.candidates import Candidates, top_candidates
from txviz.core.edits import Ablate, Knockout, Patch
from txviz.core.errors import UserError
from txviz.core.running import Run
from txviz.interventions.metrics import Metric
from txviz.interventions.runs import chunks, forward, head_layers, prompt_ids, repeated, tokens_of, unplaced
from txviz.models import LoadedModel

Mode = Literal["zero", "mean", "resample"]
MODES: tuple[Mode, ...] = get_args(Mode)
SWEEP_BATCH = 27  # rows per forward in a sweep (3 of SmolLM2's layers of 9 heads)
TOP = 10


# Scripts exported by the Interventions page before issue 47 name a component "head" or "mlp";
# a saved script still runs, so its kinds are read as the points they are.
OLD_KINDS = {"head": "head_out", "mlp": "ffn"}


@dataclass(frozen=True)
class Component:
    """A head's output (layer, head) before the output projection, or the FFN of a layer."""

    kind: Literal["head_out", "ffn"]  # the point of txviz.core.edits it ablates
    layer: int
    head: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", OLD_KINDS.get(self.kind, self.kind))
        if self.kind not in ("head_out", "ffn"):
            raise UserError(f"Cannot ablate {self.kind!r}; choose 'head_out' or 'ffn'.")

    @property
    def label(self) -> str:
        return f"L{self.layer} H{self.head}" if self.kind == "head_out" else f"MLP {self.layer}"


def every_component(loaded: LoadedModel, ffns: bool = True) -> list[Component]:
    heads = [Component("head_out", la, h) for la in range(loaded.n_layers) for h in range(loaded.n_heads)]
    return heads + ([Component("ffn", la) for la in range(loaded.n_layers)] if ffns else [])


def check_components(loaded: LoadedModel, components: Sequence[Component]) -> None:
    for c in components:
        if not 0 <= c.layer < loaded.n_layers or (c.kind == "head_out" and not 0 <= c.head < loaded.n_heads):
            raise UserError(
                f"{loaded.name} has layers 0-{loaded.n_layers - 1} and heads 0-{loaded.n_heads - 1}: "
                f"there is no {c.label}."
            )


def reference_run(
    loaded: LoadedModel, mode: Mode, reference: str, components: Sequence[Component] | None = None
) -> Run | None:
    """What the heads and MLPs computed on the reference text (None for zero ablation).

    Only the kinds among ``components`` are recorded (both when None): a head needs its output
    before the output projection, an MLP what the FFN adds, which a model placed by discovery lacks.
    """
    if mode not in MODES:
        raise UserError(f"Unknown ablation {mode!r}; choose from {', '.join(MODES)}.")
    if mode == "zero":
        return None
    kinds = {c.kind for c in components} if components is not None else {"head_out", "ffn"}
    ids = prompt_ids(loaded, reference, "reference text")
    return forward(
        loaded, repeated(ids, 1), record=frozenset(kinds & {"head_out"}), stages=frozenset(kinds & {"ffn"})
    )


def replacement(
    component: Component, mode: Mode, reference: Run | None, n_tokens: int
) -> torch.Tensor | None:
    """The value an ablated component takes: None (zero), its mean (D,) or a resample (T, D)."""
    if reference is None:
        return None
    if component.kind == "head_out":
        values = reference.head_output(component.layer, component.head)[0]  # (T_ref, D_head)
    else:
        values = reference.stage_output("ffn", component.layer)[0].float().cpu()  # (T_ref, D)
    if mode == "mean":
        return values.mean(0)
    if values.shape[0] < n_tokens:
        raise UserError(
            f"The resample prompt has {values.shape[0]} tokens; it needs at least the {n_tokens} of the "
            "prompt, so each position can take what it computed at the same position."
        )
    return values[:n_tokens]


def intervention(component: Component, value: torch.Tensor | None, rows: Sequence[int] | None = None):
    """An Ablate (zero) or Patch (mean, resample) of one component, in the given batch rows."""
    head = component.head if component.kind == "head_out" else None
    if value is None:
        return Ablate(component.kind, component.layer, head, rows=rows)
    return Patch(component.kind, component.layer, head, rows=rows, value=value)


@dataclass(frozen=True)
class Edge:
    """Attention from query position ``query`` to key position ``key`` cut in ``layers``."""

    query: int
    key: int
    layers: tuple[int, ...]

    def knockout(self, n_tokens: int) -> Knockout:
        if not (0 <= self.key <= self.query < n_tokens):
            raise UserError(
                f"An edge goes from a token to itself or an earlier one (0 to {n_tokens - 1}); "
                f"{self.query} -> {self.key} is not one."
            )
        if not self.layers:
            raise UserError("Choose at least one layer to cut the edge in.")
        return Knockout(edges=[(self.query, self.key)], layers=self.layers)


@dataclass(frozen=True, eq=False)
class AblationResult:
    """The metric, the likeliest next tokens and one head's attention, before and after."""

    tokens: tuple[str, ...]
    metric: Metric
    before: float
    after: float
    candidates: Candidates  # the likeliest tokens before, with stages "before" and "after"
    top_after: str  # the likeliest next token after (it may be none of the candidates)
    view: tuple[int, int] | None = None  # (layer, head) whose attention is kept
    attention_before: np.ndarray | None = None  # (T, T)
    attention_after: np.ndarray | None = None

    @property
    def change(self) -> float:
        return self.after - self.before


def edits_for(
    loaded: LoadedModel,
    n_tokens: int,
    components: Sequence[Component] = (),
    mode: Mode = "zero",
    reference: str = "",
    edges: Sequence[Edge] = (),
) -> list:
    """The interventions of an ablation of these components and edges."""
    check_components(loaded, components)
    if not components and not edges:
        raise UserError("Choose a head, an MLP or an attention edge to ablate.")
    ref = reference_run(loaded, mode, reference, components) if components else None
    edits = [intervention(c, replacement(c, mode, ref, n_tokens)) for c in components]
    return edits + [edge.knockout(n_tokens) for edge in edges]


def ablate(
    loaded: LoadedModel,
    text: str,
    metric: Metric,
    components: Sequence[Component] = (),
    mode: Mode = "zero",
    reference: str = "",
    edges: Sequence[Edge] = (),
    view: tuple[int, int] | None = None,
) -> AblationResult:
    """One ablation: the plain run and the ablated run of ``text``, their metric and next tokens."""
    ids = prompt_ids(loaded, text)
    edits = edits_for(loaded, len(ids), components, mode, reference, edges)
    record = frozenset({"weights"}) if view is not None else frozenset()
    before = forward(loaded, repeated(ids, 1), record=record)
    after = forward(loaded, repeated(ids, 1), edits, record=record)
    probs = [r.logits[0, -1].float().softmax(-1) for r in (before, after)]
    candidates = top_candidates(loaded.tokenizer, (("before", probs[0]), ("after", probs[1])), TOP)
    attention = (None, None)
    if view is not None:
        layer, head = view
        attention = tuple(r.stack("weights")[layer, head] for r in (before, after))
    return AblationResult(
        tokens=tokens_of(loaded, ids),
        metric=metric,
        before=float(metric(before.logits[:, -1])[0]),
        after=float(metric(after.logits[:, -1])[0]),
        candidates=candidates,
        top_after=tokens_of(loaded, [int(probs[1].argmax())])[0],
        view=view,
        attention_before=attention[0],
        attention_after=attention[1],
    )


@dataclass(frozen=True, eq=False)
class SweepResult:
    """Change of the metric when each head (and each MLP) is ablated alone."""

    tokens: tuple[str, ...]
    metric: Metric
    mode: Mode
    base: float  # the metric with nothing ablated
    heads: np.ndarray  # (L, H) float32: ablated - base
    ffn: np.ndarray  # (L,) float32; NaN where the MLPs were not ablated
    seconds: float
    notice: str = ""  # why the MLPs were not ablated, when they were asked for and cannot be placed

    @property
    def mlp(self) -> np.ndarray:
        """``ffn``: scripts exported before issue 47 print ``result.mlp``."""
        return self.ffn

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "heads": self.heads,
            "ffn": self.ffn,
            "base": np.float32(self.base),
            "tokens": np.array(self.tokens),
        }


def batched_metrics(
    loaded: LoadedModel,
    ids: Sequence[int],
    metric: Metric,
    jobs: Sequence[Sequence],  # per row: the interventions of that row (built with rows=None)
    batch_size: int,
    progress: Callable[[float], object] | None = None,
) -> np.ndarray:
    """The metric of each job run alone, computed as batches of one job per row."""
    out = []
    for chunk in chunks(list(jobs), batch_size):
        edits = [_in_row(edit, row) for row, job in enumerate(chunk) for edit in job]
        result = forward(loaded, repeated(ids, len(chunk)), edits)
        out.append(metric(result.logits[:, -1]).detach().float().cpu().numpy())
        if progress:
            progress(min(1.0, sum(len(o) for o in out) / len(jobs)))
    return np.concatenate(out) if out else np.zeros(0, np.float32)


def _in_row(edit, row: int):
    """The same edit, restricted to one batch row."""
    return dataclasses.replace(edit, rows=(row,))


def sweep(
    loaded: LoadedModel,
    text: str,
    metric: Metric,
    mode: Mode = "zero",
    reference: str = "",
    batch_size: int = SWEEP_BATCH,
    ffns: bool = True,
    progress: Callable[[float], object] | None = None,
) -> SweepResult:
    """Every head (and MLP) ablated alone: the metric's change for each, batched one per row.

    A model whose FFN output txviz cannot place (one placed by discovery) has its heads swept and
    its MLPs left out, NaN, with the reason in ``notice``; so are the heads of a hybrid's blocks that
    mix tokens without attention.
    """
    start = time.perf_counter()
    ids = prompt_ids(loaded, text)
    missing = unplaced(loaded, "ffn") if ffns else ""
    notice = f"The MLPs are left out: {missing}" if missing else ""
    ffns = ffns and not notice
    with_heads = head_layers(loaded)
    if len(with_heads) < loaded.n_layers:
        blocks = ", ".join(map(str, with_heads))
        notice = (
            f"Only blocks {blocks} call the attention function: the others have no heads. {notice}".strip()
        )
    components = [c for c in every_component(loaded, ffns) if c.kind == "ffn" or c.layer in with_heads]
    ref = reference_run(loaded, mode, reference, components)
    jobs = [[intervention(c, replacement(c, mode, ref, len(ids)))] for c in components]
    base = float(metric(forward(loaded, repeated(ids, 1)).logits[:, -1])[0])
    values = batched_metrics(loaded, ids, metric, jobs, batch_size, progress) - base
    heads = np.full((loaded.n_layers, loaded.n_heads), np.nan, np.float32)
    ffn = np.full(loaded.n_layers, np.nan, np.float32)
    for c, value in zip(components, values, strict=True):
        if c.kind == "head_out":
            heads[c.layer, c.head] = value
        else:
            ffn[c.layer] = value
    return SweepResult(
        tokens=tokens_of(loaded, ids),
        metric=metric,
        mode=mode,
        base=base,
        heads=heads,
        ffn=ffn,
        seconds=time.perf_counter() - start,
        notice=notice,
    )
