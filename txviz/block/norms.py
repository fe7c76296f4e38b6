"""LayerNorm versus BatchNorm on real activations of a padded batch of sentences.

LayerNorm normalises each token over its features: a token's output depends on that token alone.
BatchNorm normalises each feature over every token of every sentence in the batch: a sentence's
output changes when the other sentences, or the amount of padding, change. That is why sequence
models use LayerNorm (or RMSNorm).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.layouts import cached_layout
from txviz.core.running import run
from txviz.core.tokens import readable_tokens
from txviz.models import LoadedModel

EPS = 1e-5
MAX_SENTENCES = 8
MAX_SENTENCE_TOKENS = 64


@dataclass(frozen=True, eq=False)
class Batch:
    """The activations entering one LayerNorm of the model, for a padded batch."""

    sentences: tuple[str, ...]
    tokens: tuple[tuple[str, ...], ...]  # per sentence, its real tokens
    x: np.ndarray  # (B, T, D): padded positions hold what the model computed there
    mask: np.ndarray  # (B, T) bool, True for real tokens
    where: str  # which norm's input this is, in words


def sentences_of(text: str) -> list[str]:
    """One sentence per non-empty line; a clear message for too few or too many."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        raise UserError("Give at least two sentences, one per line: BatchNorm mixes sentences of a batch.")
    if len(lines) > MAX_SENTENCES:
        raise UserError(f"Give at most {MAX_SENTENCES} sentences (one per line); there are {len(lines)}.")
    return lines


def batch_activations(
    loaded: LoadedModel, sentences: list[str], layer: int, extra_padding: int = 0, stack: str | None = None
) -> Batch:
    """The real input of block ``layer``'s first norm for a right-padded batch.

    Post-LN blocks (BERT): X + MHA(X), what LayerNorm normalises after attention.
    Pre-norm blocks (Llama, GPT-2): the stream X entering the block's first norm.
    """
    require_kind(loaded, ("encoder", "decoder"), "compare LayerNorm and BatchNorm on a batch of sentences")
    layout = cached_layout(loaded.model)
    name = layout.stacks[-1].name if stack is None else stack
    if not 0 <= layer < layout.stack(name).n_layers:
        raise UserError(f"The model has layers 0 to {layout.stack(name).n_layers - 1}.")
    tok = loaded.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
    ids = [tok(s, truncation=True, max_length=MAX_SENTENCE_TOKENS)["input_ids"] for s in sentences]
    width = max(len(i) for i in ids) + extra_padding
    input_ids = torch.tensor([i + [pad] * (width - len(i)) for i in ids], device=loaded.device)
    mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i in ids], device=loaded.device)
    recorded = run(
        loaded.model,
        CaptureSettings(stages={"attn"}),
        ("hidden_states",),
        input_ids=input_ids,
        attention_mask=mask,
        use_cache=False,
    )
    x = recorded.hidden_states[layer]
    where = f"the stream X entering block {layer}'s first norm"
    if layout.form == "post-LN":
        x = x + recorded.stage(f"{name}.{layer}.attn").output
        where = f"X + MHA(X) in block {layer}, entering its first LayerNorm"
    tokens = tuple(readable_tokens(tok, i)[0] for i in ids)
    return Batch(tuple(sentences), tokens, x.float().cpu().numpy(), mask.bool().cpu().numpy(), where)


def layer_norm(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(output, mean, std): each token over its features (axis -1); no learned scale or shift."""
    mean = x.mean(-1, keepdims=True)
    std = np.sqrt(x.var(-1, keepdims=True) + EPS)
    return (x - mean) / std, mean[..., 0], std[..., 0]


def batch_norm(x: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(output, mean, std): each feature over every token of every sentence (axes 0 and 1), as
    training-mode BatchNorm does; with ``mask`` only real tokens count (padding still normalised)."""
    rows = x.reshape(-1, x.shape[-1]) if mask is None else x[mask]
    mean, std = rows.mean(0), np.sqrt(rows.var(0) + EPS)
    return (x - mean) / std, mean, std


@dataclass(frozen=True)
class Dependence:
    """How much one sentence's normalised output moved when the rest of the batch changed."""

    layer_norm: np.ndarray  # (T,) max |change| per real token of the sentence
    batch_norm: np.ndarray  # (T,)


def dependence(first: Batch, second: Batch, sentence: int = 0, exclude_padding: bool = False) -> Dependence:
    """Change of sentence ``sentence``'s outputs between two batches that share that sentence."""
    if first.sentences[sentence] != second.sentences[sentence]:
        raise UserError("The two batches must share the sentence being compared.")
    n = int(first.mask[sentence].sum())
    out = {}
    for name, norm in (("layer_norm", layer_norm), ("batch_norm", batch_norm)):
        args = [(b.mask,) if name == "batch_norm" and exclude_padding else () for b in (first, second)]
        a = norm(first.x, *args[0])[0][sentence, :n]
        b = norm(second.x, *args[1])[0][sentence, :n]
        out[name] = np.abs(a - b).max(-1)
    return Dependence(**out)
