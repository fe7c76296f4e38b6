"""Attribution's one home: input embeddings, their reference, gradient x input and integrated gradients.

The Head Detectors comparison (txviz.heads.attribution) and the step explanations
(txviz.explain.attribution) both attribute a scalar ``forward(embeds)`` to the input embeddings with
Captum; they start from the same embeddings and the same reference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from txviz.core.running import run_module
from txviz.models import LoadedModel

Forward = Callable[[torch.Tensor], torch.Tensor]  # (B, T, D) embeddings -> (B,) the quantity explained
IG_BATCH = 8  # path points per pass of integrated gradients unless the caller says otherwise


def embed(loaded: LoadedModel, ids: Sequence[int]) -> torch.Tensor:
    """The input embeddings (1, T, D) of ``ids``, detached: what the attributions start from."""
    table = loaded.model.get_input_embeddings()
    return run_module(table, torch.tensor([list(ids)], device=loaded.device)).detach()


def reference_embeddings(embeds: torch.Tensor, fixed: np.ndarray) -> torch.Tensor:
    """The integrated-gradients baseline: zeros at ordinary positions, the real embedding where ``fixed``
    (special tokens, and a decoder's first token). A decoder's first position is its attention sink:
    zeroing it moves every head at once and the 32-step path integral misses most of the change
    (SmolLM2's convergence delta on "The capital of France is": 0.76 logits with the sink kept, ~20
    without it, 33 from the padding token's embedding)."""
    reference = torch.zeros_like(embeds)
    keep = torch.as_tensor(fixed, device=embeds.device)
    reference[:, keep] = embeds[:, keep]
    return reference


def gradient_x_input(forward: Forward, inputs: torch.Tensor) -> torch.Tensor:
    """Captum's InputXGradient: d forward / d input, times the input, per input element."""
    from captum.attr import InputXGradient

    return InputXGradient(forward).attribute(inputs.clone().requires_grad_(True))


def integrated_gradients(
    forward: Forward,
    inputs: torch.Tensor,
    baseline: torch.Tensor | None = None,
    *,
    steps: int,
    batch: int = IG_BATCH,
    delta: bool = True,
) -> tuple[torch.Tensor, float | None]:
    """Captum's IntegratedGradients from ``baseline`` (zeros when None) to ``inputs`` in ``steps`` path
    points, ``batch`` per pass; and, when asked, the convergence delta (sum of attributions minus
    forward(inputs) - forward(baseline); 0 for an exact integral), which costs two more forwards."""
    from captum.attr import IntegratedGradients

    baseline = torch.zeros_like(inputs) if baseline is None else baseline
    found = IntegratedGradients(forward).attribute(
        inputs, baselines=baseline, n_steps=steps, internal_batch_size=batch, return_convergence_delta=delta
    )
    if not delta:
        return found, None
    attributions, gap = found
    return attributions, float(gap.abs().max())


def per_token(attributions: torch.Tensor) -> np.ndarray:
    """(T,) of batch item 0: the sum over the embedding dimension, each token's signed contribution."""
    return attributions[0].sum(dim=-1).detach().float().cpu().numpy()
