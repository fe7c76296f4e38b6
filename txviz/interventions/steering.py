"""Steering by activation addition (Turner et al. 2023) with a contrastive direction (Rimsky et al. 2024).

The direction is the difference of the mean residual streams of two sets of prompts after one
layer, read at each prompt's last token; generation adds ``strength`` times it to the stream after
that layer at every position, through the same per-call interventions as ablation and patching.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch

from txviz.core.countdown import Countdown, Progress
from txviz.core.edits import Steer
from txviz.core.errors import UserError
from txviz.generation.loop import GenerationRequest, generate
from txviz.generation.sampling import SamplingSettings
from txviz.interventions.runs import cut_prompt, forward, prompt_ids, repeated
from txviz.models import LoadedModel

MAX_PROMPTS = 32  # per side: each is one forward
# Shipped prompt sets (one per line): a sentiment direction, the classic activation-addition example.
POSITIVE = "I love this, it is wonderful\nWhat a great and happy day\nThis is lovely and kind"
NEGATIVE = "I hate this, it is awful\nWhat a terrible and sad day\nThis is nasty and cruel"


def prompt_lines(text: str) -> list[str]:
    """One prompt per non-empty line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


@dataclass(frozen=True, eq=False)
class Direction:
    """mean(stream | positive) - mean(stream | negative) after block ``layer``, at the last token."""

    layer: int
    vector: torch.Tensor  # (D,)
    n_positive: int
    n_negative: int

    @property
    def norm(self) -> float:
        return float(self.vector.norm())

    def steer(self, strength: float) -> Steer:
        return Steer("resid", self.layer, vector=self.vector, strength=float(strength))


def cut_sets(loaded: LoadedModel, *sets: Sequence[str]) -> tuple[list[list[str]], list[str]]:
    """Each prompt set with every prompt cut to the tokens one forward reads, and a notice per cut prompt."""
    kept, notices = [], []
    for side, prompts in zip(("first", "second"), sets, strict=False):
        cuts = [cut_prompt(loaded, prompt, f"{side} set's prompt") for prompt in prompts]
        kept.append([text for text, _ in cuts])
        notices += [notice for _, notice in cuts if notice]
    return kept, notices


def last_stream(loaded: LoadedModel, text: str, layer: int) -> torch.Tensor:
    """The residual stream after block ``layer`` at the prompt's last token, (D,)."""
    result = forward(loaded, repeated(prompt_ids(loaded, text), 1), stages=frozenset({"resid"}))
    return result.stage_output("resid", layer)[0, -1].float().cpu()


def check_sets(positive: Sequence[str], negative: Sequence[str]) -> None:
    """Raise a UserError unless both prompt sets hold 1 to MAX_PROMPTS prompts (no model needed)."""
    for side, prompts in (("first", positive), ("second", negative)):
        if not prompts:
            raise UserError(f"The {side} set of prompts is empty: write at least one prompt, one per line.")
        if len(prompts) > MAX_PROMPTS:
            raise UserError(f"The {side} set has {len(prompts)} prompts; use at most {MAX_PROMPTS}.")


def direction(
    loaded: LoadedModel,
    positive: Sequence[str],
    negative: Sequence[str],
    layer: int,
    on_prompt: Callable[[], None] | None = None,
) -> Direction:
    """The steering direction of two prompt sets at ``layer``; ``on_prompt()`` after each prompt's pass."""
    if not 0 <= layer < loaded.n_layers:
        raise UserError(f"{loaded.name} has layers 0 to {loaded.n_layers - 1}; there is no layer {layer}.")
    check_sets(positive, negative)

    def stream(text: str) -> torch.Tensor:
        found = last_stream(loaded, text, layer)
        if on_prompt:
            on_prompt()
        return found

    means = [torch.stack([stream(t) for t in prompts]).mean(0) for prompts in (positive, negative)]
    return Direction(layer, means[0] - means[1], len(positive), len(negative))


def steered_request(request: GenerationRequest, found: Direction, strength: float) -> GenerationRequest:
    """The same request (prompt, sampling, seed) with the direction added: steering is the only change."""
    return replace(request, interventions=(*request.interventions, found.steer(strength)))


def first_difference(plain: Sequence[int], steered: Sequence[int]) -> int | None:
    """The first new token where two runs differ (a shorter run differs where it ends); None if equal."""
    for index, (a, b) in enumerate(zip(plain, steered, strict=False)):
        if a != b:
            return index
    return None if len(plain) == len(steered) else min(len(plain), len(steered))


def continuation(
    loaded: LoadedModel,
    prompt: str,
    max_new_tokens: int = 30,
    interventions: tuple = (),
    seed: int = 0,
    on_step: Callable[[], None] | None = None,
) -> str:
    """Greedy continuation of ``prompt`` under ``interventions`` (the shared generation loop);
    ``on_step()`` after each new token."""
    request = GenerationRequest(
        prompt,
        max_new_tokens,
        SamplingSettings(seed=seed),
        record_attention=False,
        top_candidates=1,
        interventions=interventions,
    )
    text = ""
    for step in generate(loaded, request):
        text = step.text
        if on_step:
            on_step()
    return text


def steered_pair(
    loaded: LoadedModel,
    prompt: str,
    found: Direction,
    strength: float,
    max_new_tokens: int = 30,
    on_step: Callable[[], None] | None = None,
) -> tuple[str, str]:
    """(unsteered, steered) greedy continuations of the same prompt; ``on_step()`` after each new token."""
    plain = continuation(loaded, prompt, max_new_tokens, on_step=on_step)
    return plain, continuation(loaded, prompt, max_new_tokens, (found.steer(strength),), on_step=on_step)


def steer(
    loaded: LoadedModel,
    positive: Sequence[str],
    negative: Sequence[str],
    layer: int,
    prompt: str,
    strength: float,
    max_new_tokens: int = 30,
    progress: Progress | None = None,
) -> tuple[Direction, tuple[str, str]]:
    """The direction and the (unsteered, steered) continuations, telling ``progress(fraction, text)`` each
    prompt's pass and each new token, with the time left."""
    clock = Countdown(
        len(positive) + len(negative) + 2 * max_new_tokens, progress, "Steering: passes and tokens"
    )
    found = direction(loaded, positive, negative, layer, on_prompt=clock.step)
    return found, steered_pair(loaded, prompt, found, strength, max_new_tokens, on_step=clock.step)
