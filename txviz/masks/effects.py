"""A mask pattern applied to a real model: its attention before and after, and its output.

The pattern travels in CaptureSettings(extra_mask=...), a per-call setting of the one attention
function, so the shared cached model is never changed. It applies to every layer and head, on top
of the model's own mask (a decoder stays causal whatever the pattern allows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.candidates import Candidates, top_candidates
from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.running import run
from txviz.core.trace import AttentionTrace
from txviz.core.tracing import TEXT_KINDS, encode, trace_run
from txviz.masks import patterns as masks
from txviz.models import LoadedModel

MAX_TOKENS = 128  # every head of 30 layers at 128 tokens is ~18 MB per trace; two are kept


def pattern_for_model(loaded: LoadedModel, n: int, pattern: str, **params: int) -> masks.Fixed:
    """The pattern for n tokens as the model will see it: within its own mask, no empty row."""
    if pattern not in masks.PATTERNS:
        raise masks.MaskError(f"Unknown pattern {pattern!r}; choose from {', '.join(masks.PATTERNS)}.")
    if not masks.PATTERNS[pattern].square:
        raise masks.MaskError(
            f"{masks.PATTERNS[pattern].label} needs an encoder-decoder model; "
            "choose a self-attention pattern here."
        )
    mask = masks.PATTERNS[pattern].mask(n, **params)
    if loaded.is_causal:
        # The model masks the future anyway; showing it here keeps the picture honest.
        mask = mask & masks.causal_mask(n)
    return masks.ensure_attendable(mask)


@dataclass(frozen=True)
class DecoderEffect:
    """What the mask does to a decoder: loss on the text and the next-token prediction."""

    loss_before: float  # mean cross-entropy of each next token, nats
    loss_after: float
    top_before: Candidates  # the likeliest tokens after the last token
    top_after: Candidates

    @property
    def same_prediction(self) -> bool:
        return self.top_before.ids[0] == self.top_after.ids[0]


@dataclass(frozen=True)
class EncoderEffect:
    """What the mask does to an encoder: how far the embeddings move."""

    sentence_cosine: float  # mean-pooled sentence embedding, masked vs unmasked
    token_cosine: np.ndarray  # (n,) each token's last hidden state, masked vs unmasked


@dataclass(frozen=True)
class MaskedRun:
    """One text through one model with and without the pattern."""

    before: AttentionTrace
    after: AttentionTrace
    mask: np.ndarray  # bool (query_pos, key_pos) as applied
    notice: str  # rows given themselves, text cut ...
    effect: DecoderEffect | EncoderEffect


def _top(loaded: LoadedModel, logits: torch.Tensor, k: int) -> Candidates:
    """The k likeliest tokens of one logit vector, with their probabilities."""
    return top_candidates(loaded.tokenizer, torch.softmax(logits.float(), dim=-1), k)


def _loss(logits: torch.Tensor, ids: list[int]) -> float:
    """Mean cross-entropy of each next token (what the model's own ``labels=`` loss computes)."""
    target = torch.tensor(ids[1:], device=logits.device)
    return float(torch.nn.functional.cross_entropy(logits[0, :-1].float(), target))


def _check_loss_length(ids: list[int]) -> None:
    if len(ids) < 2:
        raise UserError("The loss needs at least two tokens: type a longer text.")


def _decoder_effect(loaded: LoadedModel, ids: list[int], before, after, k: int = 5) -> DecoderEffect:
    """Loss and next token from the logits (1, T, V) of the unmasked and the masked pass."""
    return DecoderEffect(
        loss_before=_loss(before, ids),
        loss_after=_loss(after, ids),
        top_before=_top(loaded, before[0, -1], k),
        top_after=_top(loaded, after[0, -1], k),
    )


def _encoder_effect(before: torch.Tensor, after: torch.Tensor) -> EncoderEffect:
    """Cosines from the last hidden states (1, T, D) of the unmasked and the masked pass."""
    before, after = before[0].float(), after[0].float()  # (n, d_model)
    # Sentence embedding as all-MiniLM-L6-v2 defines it: the mean over tokens.
    sentence = torch.nn.functional.cosine_similarity(before.mean(0), after.mean(0), dim=0)
    tokens = torch.nn.functional.cosine_similarity(before, after, dim=-1)
    return EncoderEffect(float(sentence), tokens.cpu().numpy())


def _outputs(loaded: LoadedModel, ids: list[int], mask: np.ndarray | None, item: str) -> torch.Tensor:
    """Logits or last hidden state of one pass with the extra mask when given; nothing recorded."""
    extra = None if mask is None else torch.as_tensor(mask)
    input_ids = torch.tensor([ids], device=loaded.device)
    return getattr(run(loaded.model, CaptureSettings(extra_mask=extra), (item,), input_ids=input_ids), item)


def decoder_effect(loaded: LoadedModel, ids: list[int], mask: np.ndarray, k: int = 5) -> DecoderEffect:
    """Loss on the text and the next token, with and without the mask."""
    _check_loss_length(ids)
    before, after = (_outputs(loaded, ids, m, "logits") for m in (None, mask))
    return _decoder_effect(loaded, ids, before, after, k)


def encoder_effect(loaded: LoadedModel, ids: list[int], mask: np.ndarray) -> EncoderEffect:
    """Cosine similarity of the mean-pooled embedding (and of each token) to the unmasked one."""
    return _encoder_effect(*(_outputs(loaded, ids, m, "hidden") for m in (None, mask)))


def apply_pattern(
    loaded: LoadedModel, text: str, pattern: str, max_tokens: int = MAX_TOKENS, **params: int
) -> MaskedRun:
    """Run text through the model with and without a pattern from masks.PATTERNS.

    Two passes in all: each records the attention and keeps the output the effect needs.
    """
    require_kind(loaded, TEXT_KINDS, "run a mask pattern on a text")
    encoded = encode(loaded, text, max_tokens)
    if loaded.is_causal:
        _check_loss_length(encoded.ids)
    fixed = pattern_for_model(loaded, len(encoded.ids), pattern, **params)
    item = "logits" if loaded.is_causal else "hidden"
    before, plain = trace_run(loaded, text, max_tokens=max_tokens, outputs=(item,))
    extra = torch.as_tensor(fixed.mask)  # (n, n) bool
    after, masked = trace_run(loaded, text, max_tokens=max_tokens, extra_mask=extra, outputs=(item,))
    if loaded.is_causal:
        effect = _decoder_effect(loaded, encoded.ids, plain.logits, masked.logits)
    else:
        effect = _encoder_effect(plain.hidden, masked.hidden)
    notice = " ".join(part for part in (encoded.notice, fixed.notice) if part)
    return MaskedRun(before, after, fixed.mask, notice, effect)


def prediction_rows(effect: DecoderEffect) -> list[dict[str, str]]:
    """The top next tokens without and with the mask, as table rows."""
    return [
        {"rank": str(i + 1), "unmasked": f"{b[0]!r} {b[1]:.1%}", "with the pattern": f"{a[0]!r} {a[1]:.1%}"}
        for i, (b, a) in enumerate(zip(effect.top_before.pairs(), effect.top_after.pairs(), strict=True))
    ]


def forbidden_weight(run: MaskedRun) -> float:
    """Largest weight any head puts where the mask forbids (0.0 when the mask holds)."""
    return float(run.after.weights[..., ~run.mask].max(initial=0.0))
