"""Why this token: one step's choice attributed to every earlier token, by three Captum methods.

The quantity explained is the chosen token's log-probability, or, contrastively, the logit difference
between the chosen token and an alternative ("why X rather than Y").

Captum's ``LLMAttribution`` and ``LLMGradientAttribution`` do not fit here, so their building blocks
(``InputXGradient``, ``IntegratedGradients``, ``FeatureAblation``) run on the input embeddings with a
forward function that goes through core's ``run(..., grad=True, inputs_embeds=...)``:
- both wrappers call the model themselves (``model.forward``, ``model(ids)``), outside the front door
  and the per-call ContextVar that many sessions sharing one model rely on;
- their ``TextTokenInput`` re-tokenises a string, and a generation's ids need not survive decoding
  and re-encoding (byte-level BPE merges differently), so the explained sequence would not be the one
  generated;
- ``LLMAttribution`` evaluates one perturbation per forward; feature ablation here is batched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import UserError, require_kind
from txviz.core.running import run
from txviz.explain.gradients import (
    embed,
    gradient_x_input,
    integrated_gradients,
    per_token,
    reference_embeddings,
)
from txviz.explain.methods import BATCH_TOKENS, IG_STEPS, METHODS
from txviz.models import LoadedModel


class ExplainError(UserError):
    """A step cannot be explained as asked; the message is meant for the user."""


@dataclass(frozen=True)
class Target:
    """What is explained at a step: log p(chosen), or logit(chosen) - logit(alternative)."""

    chosen: int
    alternative: int | None = None

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        """(B, V) logits of the step -> (B,) the explained quantity."""
        logits = logits.float()
        if self.alternative is None:
            return torch.log_softmax(logits, dim=-1)[:, self.chosen]
        return logits[:, self.chosen] - logits[:, self.alternative]

    def describe(self, tokens: Callable[[int], str]) -> str:
        if self.alternative is None:
            return f"log p({tokens(self.chosen)!r})"
        return f"logit({tokens(self.chosen)!r}) - logit({tokens(self.alternative)!r})"


def check_target(target: Target, vocabulary: int) -> None:
    """ExplainError for an alternative equal to the chosen token or outside the vocabulary."""
    for token in (target.chosen, target.alternative):
        if token is not None and not 0 <= token < vocabulary:
            raise ExplainError(f"Token id {token} is outside the vocabulary of {vocabulary:,} tokens.")
    if target.alternative == target.chosen:
        raise ExplainError(
            "The alternative is the chosen token itself: 'why X rather than X' has nothing to explain. "
            "Pick another candidate."
        )


def attribute_embeddings(
    forward: Callable[[torch.Tensor], torch.Tensor],
    embeds: torch.Tensor,
    method: str,
    reference: torch.Tensor | None = None,
    steps: int = IG_STEPS,
    batch: int | None = None,
) -> np.ndarray:
    """Per position (T,): ``method``'s attribution of ``forward`` (1, T, D) -> (1,), summed over the
    embedding; ``reference`` (zeros by default) is what integrated gradients start from and what
    feature ablation puts in a position's place; ``batch`` inputs go through one pass (default: what
    BATCH_TOKENS allows)."""
    reference = torch.zeros_like(embeds) if reference is None else reference
    batch = batch or max(1, BATCH_TOKENS // embeds.shape[1])
    if method == "gradient":
        with torch.enable_grad():
            return per_token(gradient_x_input(forward, embeds))
    if method == "ig":
        with torch.enable_grad():
            attributions, _ = integrated_gradients(
                forward, embeds, reference, steps=steps, batch=min(batch, steps), delta=False
            )
        return per_token(attributions)
    if method == "ablation":
        from captum.attr import FeatureAblation

        positions = torch.arange(embeds.shape[1], device=embeds.device)[None, :, None]  # (1, T, 1)
        mask = positions.expand_as(embeds)  # every element of a position is one feature
        with torch.no_grad():
            attributions = FeatureAblation(forward).attribute(
                embeds, baselines=reference, feature_mask=mask, perturbations_per_eval=batch
            )
        return attributions[0, :, 0].float().cpu().numpy()  # a feature's value repeats over its elements
    raise ValueError(f"Unknown method {method!r}; choose from {sorted(METHODS)}.")


def decoder_forward(loaded: LoadedModel, target: Target) -> Callable[[torch.Tensor], torch.Tensor]:
    """inputs_embeds (B, T, D) -> (B,) the target at the last position, through core's run."""
    model = loaded.model

    def forward(embeds: torch.Tensor) -> torch.Tensor:
        # grad: autograd as Captum has it (on for the gradients, off for ablation)
        logits = run(model, outputs=("last_logits",), grad=True, inputs_embeds=embeds).logits
        return target(logits[:, -1])

    return forward


def fixed_positions(n: int) -> np.ndarray:
    """Positions kept in the reference: a decoder's first token, its attention sink (see
    heads.attribution.reference_embeddings for why zeroing it breaks integrated gradients)."""
    fixed = np.zeros(n, dtype=bool)
    fixed[0] = True
    return fixed


def attribute_step(
    loaded: LoadedModel, context: Sequence[int], target: Target, method: str, steps: int = IG_STEPS
) -> np.ndarray:
    """Attribution (T,) of ``target`` at the step that reads ``context`` (prompt and tokens generated
    before the step) to each of its tokens."""
    require_kind(loaded, ("decoder",), "attribute a generated token to earlier tokens")
    if not context:
        raise ExplainError("There is no earlier token to attribute the choice to.")
    check_target(target, loaded.model.get_input_embeddings().num_embeddings)
    embeds = embed(loaded, context)
    reference = reference_embeddings(embeds, fixed_positions(len(context)))
    return attribute_embeddings(decoder_forward(loaded, target), embeds, method, reference, steps)
