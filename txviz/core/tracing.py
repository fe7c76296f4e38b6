"""Run a model on text and return its attention as an AttentionTrace."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core import config
from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.loaded import LoadedModel, ModelLoadError
from txviz.core.running import Run, run
from txviz.core.tokens import readable_tokens, special_flags, word_groups
from txviz.core.trace import AttentionTrace

# Every head of every layer at this length is already ~300 MB of float32 for SmolLM2.
EXPLORER_MAX_TOKENS = 512
TEXT_KINDS = ("encoder", "decoder")  # models that read one text and attend within it
MIN_BUDGET_TOKENS = 8  # fewer tokens than this under the memory budget: refuse rather than cut


class TraceTooLarge(UserError):
    """Not even a few tokens' trace fits the server's trace memory budget."""


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


def trace_bytes(loaded: LoadedModel, n_tokens: int, record: tuple[str, ...] = ("weights",)) -> int:
    """Bytes of a trace's float32 arrays: [layer, head, T, T] weights (and scores), [.., T, d_head] queries, keys."""
    cfg = loaded.config.get_text_config()
    d_head = getattr(cfg, "head_dim", None) or getattr(cfg, "hidden_size", 0) // max(loaded.n_heads, 1)
    per_head = n_tokens * n_tokens * (1 + ("scores" in record))
    per_head += n_tokens * d_head * sum(item in record for item in ("queries", "keys"))
    return loaded.n_layers * loaded.n_heads * per_head * 4


def fit_budget(
    loaded: LoadedModel, text: str, encoded: Encoded, record: tuple[str, ...], budget_mb: float
) -> Encoded:
    """``encoded`` itself when its trace fits ``budget_mb``, else the text cut to the tokens that fit, with a notice.

    The pass writes each layer's weights once, into the array the trace returns (``_slots``).
    """
    n = len(encoded.ids)
    budget = budget_mb * 2**20
    if trace_bytes(loaded, n, record) <= budget:
        return encoded
    fits = n
    while fits > 0 and trace_bytes(loaded, fits, record) > budget:  # bytes grow as T^2: shrink by the root
        fits = int(fits * (budget / trace_bytes(loaded, fits, record)) ** 0.5)
    size = _megabytes(trace_bytes(loaded, n, record))
    limit = f"the server's trace memory budget of {budget_mb:g} MB (TXVIZ_TRACE_MEMORY_MB)"
    if fits < MIN_BUDGET_TOKENS:
        raise TraceTooLarge(
            f"{loaded.name} has {loaded.n_layers} layers x {loaded.n_heads} heads: the trace of {n:,} tokens "
            f"would take {size}, and not even {MIN_BUDGET_TOKENS} tokens fit {limit}. Raise the budget, "
            "or choose a smaller model."
        )
    cut = encode(loaded, text, fits)
    return Encoded(
        cut.ids,
        cut.offsets,
        f"The trace of all {n:,} tokens would take {size} ({loaded.n_layers} layers x {loaded.n_heads} "
        f"heads); only the first {len(cut.ids):,} tokens are shown, to stay within {limit}.",
    )


def _megabytes(n_bytes: float) -> str:
    mb = n_bytes / 2**20
    return f"{mb:,.0f} MB" if mb >= 10 else f"{mb:.2g} MB"


def trace_text(
    loaded: LoadedModel,
    text: str,
    *,
    max_tokens: int | None = EXPLORER_MAX_TOKENS,
    record: tuple[str, ...] = ("weights",),
    normalize=None,
    extra_mask=None,
    budget_mb: float | None = None,
) -> AttentionTrace:
    """Attention of every layer and head of a text model on ``text``.

    A text whose trace would pass ``budget_mb`` (default: the server's ``trace_memory_mb``) is cut
    with a notice, or refused with ``TraceTooLarge`` when not even a few tokens fit.
    """
    trace, _ = trace_run(
        loaded,
        text,
        max_tokens=max_tokens,
        record=record,
        normalize=normalize,
        extra_mask=extra_mask,
        budget_mb=budget_mb,
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
    budget_mb: float | None = None,
) -> tuple[AttentionTrace, Run]:
    """``trace_text`` and, from the same single pass, the model's logits or last hidden state."""
    encoded = prepare(loaded, text, max_tokens=max_tokens, record=record, budget_mb=budget_mb)
    slots = _slots(loaded, 1, len(encoded.ids))
    settings = _settings(record, normalize, extra_mask, slots)
    input_ids = torch.tensor([encoded.ids], device=loaded.device)
    result = run(loaded.model, settings, outputs, input_ids=input_ids)
    return _trace_of(loaded, encoded, result, record, row=0, slots=slots), result


def prepare(
    loaded: LoadedModel,
    text: str,
    *,
    max_tokens: int | None = EXPLORER_MAX_TOKENS,
    record: tuple[str, ...] = ("weights",),
    budget_mb: float | None = None,
) -> Encoded:
    """The ids ``trace_text`` would run: cut to the model's limit and the memory budget, or refused."""
    require_kind(loaded, TEXT_KINDS, "trace the attention of a text")
    budget = config.active().trace_memory_mb if budget_mb is None else budget_mb
    return fit_budget(loaded, text, encode(loaded, text, max_tokens), record, budget)


def traces(
    loaded: LoadedModel, texts: list[Encoded], *, record: tuple[str, ...] = ("weights",)
) -> list[AttentionTrace]:
    """The trace of each prepared text, all from one right-padded forward: each as ``trace_text`` gives it alone.

    Padding on the right leaves every real token's positions as they are alone, and the attention
    mask keeps padded keys at exactly zero weight (causal rows never reach them), so cutting the
    padded rows and columns off leaves each text's own records.
    """
    longest = max(len(t.ids) for t in texts)
    slots = _slots(loaded, len(texts), longest)
    if len(texts) == 1:
        input_ids = torch.tensor([texts[0].ids], device=loaded.device)
        result = run(loaded.model, _settings(record, slots=slots), input_ids=input_ids)
        return [_trace_of(loaded, texts[0], result, record, slots=slots)]
    pad = loaded.tokenizer.pad_token_id or 0  # any real id: the mask hides it
    ids = torch.tensor([t.ids + [pad] * (longest - len(t.ids)) for t in texts], device=loaded.device)
    mask = torch.tensor(
        [[1] * len(t.ids) + [0] * (longest - len(t.ids)) for t in texts], device=loaded.device
    )
    result = run(loaded.model, _settings(record, slots=slots), input_ids=ids, attention_mask=mask)
    return [_trace_of(loaded, t, result, record, row=i, slots=slots) for i, t in enumerate(texts)]


def _settings(record: tuple[str, ...], normalize=None, extra_mask=None, slots=None) -> CaptureSettings:
    return CaptureSettings(
        record=frozenset(record) | {"weights"}, normalize=normalize, extra_mask=extra_mask, weights_into=slots
    )


def _slots(loaded: LoadedModel, batch: int, n_tokens: int) -> torch.Tensor | None:
    """Where the pass writes each layer's weights: one [call, B, H, T, T] array, the trace's own memory.

    Copying ~30 per-layer maps into one array afterwards held every map twice (1 GB more for
    SmolLM2 at 1,024 tokens) and cost a pass over them. Pages are touched only when written, so a
    model whose calls do not fit the slots (eager fallback, a GPU) costs nothing and is stacked.
    torch allocates, not numpy: its allocator asks for huge pages, and writing a layer's weights
    into 4 KiB pages faulted one by one took longer than eager attention's whole layer.
    """
    if torch.device(loaded.device).type != "cpu":
        return None
    return torch.empty((loaded.n_layers, batch, loaded.n_heads, n_tokens, n_tokens), dtype=torch.float32)


def _filled(result: Run, slots: torch.Tensor | None) -> bool:
    """True when each recorded call's weights are the slot of its layer, in order."""
    names = result.names()
    if slots is None or len(names) != len(slots):
        return False
    calls = [result.attention[name][-1].weights for name in names]
    return all(w is not None and w.data_ptr() == s.data_ptr() for w, s in zip(calls, slots, strict=True))


def _trace_of(
    loaded: LoadedModel,
    encoded: Encoded,
    result: Run,
    record: tuple[str, ...],
    row: int = 0,
    slots: torch.Tensor | None = None,
) -> AttentionTrace:
    """Batch item ``row`` of a pass as an AttentionTrace, cut to its own tokens (a copy when it was padded)."""
    n = len(encoded.ids)
    written = _filled(result, slots)

    def own(item: str) -> np.ndarray:
        array = slots.numpy()[:, row] if item == "weights" and written else result.stack(item, row=row)
        array = array[..., :n, :n] if item in ("weights", "scores") else array[..., :n, :]
        return np.ascontiguousarray(array, dtype=np.float32)  # no copy unless padding was cut off

    tokens, raw = readable_tokens(loaded.tokenizer, encoded.ids)
    optional = {item: own(item) if item in record else None for item in ("scores", "queries", "keys")}
    return AttentionTrace(
        query_tokens=tokens,
        key_tokens=tokens,
        weights=own("weights"),
        model_name=loaded.name,
        kind="causal" if loaded.is_causal else "self",
        layer_names=tuple(result.names()),
        special=special_flags(loaded.tokenizer, encoded.ids),
        notice=encoded.notice,
        raw_tokens=raw,
        **optional,
    )


def words_of(loaded: LoadedModel, text: str, max_tokens: int | None = EXPLORER_MAX_TOKENS) -> list[int]:
    """Word index of each token of ``text`` as ``trace_text`` tokenises it."""
    encoded = encode(loaded, text, max_tokens)
    return word_groups(loaded.tokenizer, text, encoded.ids, encoded.offsets)
