"""Run a model on text and return its attention as an AttentionTrace."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.loaded import LoadedModel, ModelLoadError
from txviz.core.running import Run, run
from txviz.core.tokens import readable_tokens, special_flags, word_groups
from txviz.core.trace import AttentionTrace

# Every head of every layer at this length is already ~300 MB of float32 for SmolLM2.
EXPLORER_MAX_TOKENS = 512
TEXT_KINDS = ("encoder", "decoder")  # models that read one text and attend within it


@dataclass(frozen=True)
class Encoded:
    """Text as the model's input ids, with what a view needs to label them."""

    ids: list[int]
    offsets: list[tuple[int, int]]
    notice: str  # non-empty when the text was cut


def encode(loaded: LoadedModel, text: str, max_tokens: int | None = None) -> Encoded:
    """Tokenise text, cutting it to the model's limit (or max_tokens) with a notice."""
    if loaded.tokenizer is None:
        raise ModelLoadError(f"{loaded.name} has no tokenizer: it cannot read text.")
    if not text or not text.strip():
        raise UserError("The text is empty: type or upload some text first.")
    limit = min(loaded.n_ctx, max_tokens or loaded.n_ctx)
    enc = loaded.tokenizer(text, truncation=True, max_length=limit, return_offsets_mapping=True)
    full = len(loaded.tokenizer(text, truncation=False)["input_ids"]) if len(enc["input_ids"]) >= limit else 0
    notice = ""
    if full > limit:
        notice = f"The text has {full:,} tokens; only the first {limit:,} are shown."
    return Encoded(list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]], notice)


def trace_text(
    loaded: LoadedModel,
    text: str,
    *,
    max_tokens: int | None = EXPLORER_MAX_TOKENS,
    record: tuple[str, ...] = ("weights",),
    normalize=None,
    extra_mask=None,
) -> AttentionTrace:
    """Attention of every layer and head of a text model on ``text``."""
    trace, _ = trace_run(
        loaded, text, max_tokens=max_tokens, record=record, normalize=normalize, extra_mask=extra_mask
    )
    return trace


def trace_run(
    loaded: LoadedModel,
    text: str,
    *,
    max_tokens: int | None = EXPLORER_MAX_TOKENS,
    record: tuple[str, ...] = ("weights",),
    normalize=None,
    extra_mask=None,
    outputs: tuple[str, ...] = (),
) -> tuple[AttentionTrace, Run]:
    """``trace_text`` and, from the same single pass, the model's logits or last hidden state."""
    require_kind(loaded, TEXT_KINDS, "trace the attention of a text")
    encoded = encode(loaded, text, max_tokens)
    settings = CaptureSettings(
        record=frozenset(record) | {"weights"}, normalize=normalize, extra_mask=extra_mask
    )
    input_ids = torch.tensor([encoded.ids], device=loaded.device)
    result = run(loaded.model, settings, outputs, input_ids=input_ids)
    rec = result
    names = list(rec.attention)
    tokens, raw = readable_tokens(loaded.tokenizer, encoded.ids)
    optional = {item: rec.stack(item) if item in record else None for item in ("scores", "queries", "keys")}
    trace = AttentionTrace(
        query_tokens=tokens,
        key_tokens=tokens,
        weights=rec.stack("weights").astype(np.float32, copy=False),
        model_name=loaded.name,
        kind="causal" if loaded.is_causal else "self",
        layer_names=tuple(names),
        special=special_flags(loaded.tokenizer, encoded.ids),
        notice=encoded.notice,
        raw_tokens=raw,
        **optional,
    )
    return trace, result


def words_of(loaded: LoadedModel, text: str, max_tokens: int | None = EXPLORER_MAX_TOKENS) -> list[int]:
    """Word index of each token of ``text`` as ``trace_text`` tokenises it."""
    encoded = encode(loaded, text, max_tokens)
    return word_groups(loaded.tokenizer, text, encoded.ids, encoded.offsets)
