"""One generation step explained: attributions, the newest token's attention, their rank agreement,
and the logit lens of the step (txviz.block.lens) for the chosen token."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from txviz.block.lens import check_lens, logit_lens
from txviz.block.recording import run_ids
from txviz.core.countdown import Countdown, Progress
from txviz.core.tokens import readable_tokens
from txviz.explain.attribution import ExplainError, Target, attribute_step
from txviz.explain.methods import IG_STEPS, METHODS
from txviz.models import LoadedModel


def check_step(n_steps: int, index: int) -> None:
    """ExplainError unless ``index`` is a step of a generation of ``n_steps`` steps."""
    if n_steps == 0:
        raise ExplainError(
            "The generation stopped before making any token, so there is no step to explain: "
            "generate again with more new tokens or another prompt."
        )
    if not 0 <= index < n_steps:
        raise ExplainError(f"Step {index} is beyond the generation: choose a step from 0 to {n_steps - 1}.")


def step_context(
    prompt_ids: Sequence[int], generated: Sequence[int], index: int
) -> tuple[tuple[int, ...], int]:
    """(the ids step ``index`` read: the prompt and the tokens generated before it, its chosen token)."""
    check_step(len(generated), index)
    return tuple(prompt_ids) + tuple(generated[:index]), int(generated[index])


@dataclass(frozen=True, eq=False)
class StepAttribution:
    """Each method's attribution (T,) of one step's target to the T tokens it read."""

    tokens: tuple[str, ...]
    scores: dict[str, np.ndarray]  # method key (attribution.METHODS) -> signed (T,)
    target: str  # what is explained, in words


def explain_attribution(
    loaded: LoadedModel,
    context: Sequence[int],
    chosen: int,
    alternative: int | None = None,
    methods: Sequence[str] = tuple(METHODS),
    steps: int = IG_STEPS,
    progress: Progress | None = None,
) -> StepAttribution:
    """Every asked method's attribution of log p(chosen) (or of the logit difference to ``alternative``);
    ``progress(fraction, text)`` hears of each method done, with the time left, in forward passes."""
    target = Target(int(chosen), None if alternative is None else int(alternative))
    tokens = readable_tokens(loaded.tokenizer, list(context))[0]
    passes = {m: method_passes(m, len(context), steps) for m in methods}
    clock = Countdown(sum(passes.values()), progress, "Attributing: forward and backward passes")
    scores = {}
    for m in methods:
        scores[m] = attribute_step(loaded, context, target, m, steps)
        clock.advance(passes[m])

    def word(token_id: int) -> str:
        return readable_tokens(loaded.tokenizer, [token_id])[0][0]

    return StepAttribution(tuple(tokens), scores, target.describe(word))


def method_passes(method: str, n_tokens: int, steps: int = IG_STEPS) -> int:
    """About how many passes a method costs at a step reading ``n_tokens``: the progress bar's units."""
    return {"gradient": 1, "ig": steps + 1, "ablation": n_tokens + 1}.get(method, 1)


@dataclass(frozen=True, eq=False)
class StepLens:
    """The logit lens at the step's position: row 0 the embeddings, row i after block i."""

    chosen: int
    rank: np.ndarray  # (N + 1,) rank of the chosen token (0 = top)
    probability: np.ndarray  # (N + 1,) its probability
    top_ids: np.ndarray  # (N + 1,) the top token per layer; the last row is the model's own argmax
    top_probs: np.ndarray  # (N + 1,)
    top_tokens: tuple[str, ...]


def step_lens(loaded: LoadedModel, context: Sequence[int], chosen: int) -> StepLens:
    """Rank and probability of ``chosen`` after every layer, read at the last position of ``context``."""
    check_lens(loaded)
    if not context:
        raise ExplainError("There is no earlier token to read the lens at.")
    block = run_ids(loaded, context)
    last = slice(len(context) - 1, len(context))
    lens = logit_lens(loaded, block, last, targets=np.array([chosen]))
    return StepLens(
        int(chosen), lens.final_rank[:, 0], lens.final_prob[:, 0], lens.top_ids[:, 0],
        lens.top_probs[:, 0], tuple(row[0] for row in lens.top_tokens),
    )  # fmt: skip


def compared_positions(n: int) -> np.ndarray:
    """Positions whose ranks are compared: all but the first (the attention sink, fixed in the
    reference of integrated gradients and ablation), unless that leaves fewer than 3."""
    keep = np.ones(n, dtype=bool)
    if n - 1 >= 3:
        keep[0] = False
    return keep


def rank_correlations(measures: dict[str, np.ndarray]) -> np.ndarray:
    """Spearman correlation (scipy) of every pair of measures' magnitudes over the compared positions."""
    from scipy.stats import spearmanr

    rows = np.stack([np.abs(np.asarray(m, dtype=np.float64)) for m in measures.values()])
    keep = compared_positions(rows.shape[1])
    if keep.sum() < 3:
        raise ExplainError(
            "Ranking needs at least 3 earlier tokens: explain a later step or a longer prompt."
        )
    rho = spearmanr(rows[:, keep], axis=1).statistic
    if np.ndim(rho) == 0:  # scipy gives one number for two measures
        rho = np.array([[1.0, rho], [rho, 1.0]])
    return np.asarray(rho, dtype=np.float64)


def attention_measures(row: np.ndarray, layer: int, head: int) -> dict[str, np.ndarray]:
    """The newest token's attention [layer, head, key] as two measures: a layer's head mean, one head."""
    row = np.asarray(row, dtype=np.float32)
    return {
        f"attention, layer {layer} mean": row[layer].mean(axis=0),
        f"attention, layer {layer} head {head}": row[layer, head],
    }
