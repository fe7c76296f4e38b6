"""Cross-attention by hand: q_dec . k_enc / sqrt(d) and its softmax from captured queries and keys."""

from __future__ import annotations

import numpy as np
import torch

from txviz.core.capture import CaptureSettings
from txviz.core.errors import require_kind
from txviz.core.running import run
from txviz.core.trace import AttentionTrace
from txviz.models import LoadedModel
from txviz.selfattention.toy import RealQueryStep, real_query_step
from txviz.seq2seq.decoding import Seq2SeqTrace, _start_and_end, encode_source, places

RECORD = frozenset({"weights", "scores", "queries", "keys"})


def decoder_inputs(loaded: LoadedModel, trace: Seq2SeqTrace) -> list[int]:
    """The target ids the decoder read: its start token, then each chosen token but the last."""
    start, _ = _start_and_end(loaded)
    return [start] + [step.token_id for step in trace.steps][:-1]


@torch.no_grad()
def cross_attention_trace(loaded: LoadedModel, source: str, trace: Seq2SeqTrace) -> AttentionTrace:
    """One pass over the decoded target recording cross-attention's weights, scores, queries, keys.

    Queries come from the decoder (one per target token), keys from the encoder's output (one per
    source token): [layer, head, target, d_head] and [layer, head, source, d_head].
    """
    require_kind(loaded, ("encoder-decoder",), "show cross-attention by hand")
    source_ids, _ = encode_source(loaded, source)
    targets = torch.tensor([decoder_inputs(loaded, trace)], device=source_ids.device)
    rec = run(
        loaded.model,
        CaptureSettings(record=RECORD),
        input_ids=source_ids,
        attention_mask=torch.ones_like(source_ids),
        decoder_input_ids=targets,
        use_cache=False,
    )
    cross_names = places(rec, "decoder", True, "cross-attention", loaded)
    return AttentionTrace(
        query_tokens=trace.target_tokens,
        key_tokens=trace.source_tokens,
        weights=rec.stack("weights", names=cross_names).astype(np.float32),
        model_name=loaded.name,
        kind="cross",
        layer_names=tuple(cross_names),
        scores=rec.stack("scores", names=cross_names),
        queries=rec.stack("queries", names=cross_names),
        keys=rec.stack("keys", names=cross_names),
    )


def cross_step(cross: AttentionTrace, layer: int, head: int, target_pos: int) -> RealQueryStep:
    """One target token's query against every source key, recomputed and beside the captured row."""
    return real_query_step(cross, layer, head, target_pos)


def largest_gaps(cross: AttentionTrace) -> tuple[float, float]:
    """Over every layer, head and target token: largest score gap and largest weight gap."""
    from scipy.special import softmax  # imported on use, like the rest of scipy here

    scale = np.sqrt(cross.queries.shape[-1])
    scores = np.einsum("lhqd,lhkd->lhqk", cross.queries.astype(np.float64), cross.keys.astype(np.float64))
    scores = scores / scale
    weights = softmax(scores, axis=-1)
    return float(np.abs(scores - cross.scores).max()), float(np.abs(weights - cross.weights).max())
