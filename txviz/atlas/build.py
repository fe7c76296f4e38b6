"""Building an atlas: the corpus tokenised once, cut into windows, streamed through the front door in batches.

No map is kept. A capture reduction folds each layer's block of weights, as it is computed, into
each query row's share of attention on Head Detectors' targets (one batched product against the
window's target masks), its entropy, and its largest non-sink weight and that key. The rows'
shares are summed per head, and the rows' criteria feed each head's running top-k and decile
samples (txviz.atlas.topk); the block is then dropped.

The "output" criterion is the norm of the head's output as it enters the residual stream,
||o_h W_O[h]||, computed as sqrt(o_h G_h o_h^T) with G_h = W_O[h] W_O[h]^T from the model map's
output projection; where the map cannot place that projection, it is the norm of o_h before the
projection (a notice says so).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from txviz.atlas import atlas as schema
from txviz.atlas.atlas import Atlas, Settings
from txviz.atlas.corpus import AtlasCorpus
from txviz.atlas.scan import DISTANCE, TARGETS, TOTAL, Scan
from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError
from txviz.core.layouts import UnknownLayoutError, cached_layout
from txviz.core.reduction import Block, Reduction
from txviz.core.running import run
from txviz.core.tokens import readable_tokens, special_flags
from txviz.heads import detectors as det
from txviz.heads.corpus import sequence_prefix
from txviz.heads.runs import check_size
from txviz.models import LoadedModel

Progress = Callable[[float, str], None]
DEFAULT = Settings()


@dataclass(frozen=True)
class Windows:
    """The corpus's token ids cut into consecutive windows, each starting with the model's fixed tokens."""

    ids: np.ndarray  # int32 [windows, window], -1 past a short last window
    notice: str = ""

    @property
    def lengths(self) -> np.ndarray:
        return (self.ids >= 0).sum(axis=1)


def model_id(loaded: LoadedModel) -> str:
    """The weights' identity: where they came from and a digest of every parameter's shape and a sample."""
    digest = hashlib.sha256()
    for name, param in loaded.model.named_parameters():
        flat = param.detach().reshape(-1)
        sample = flat[:: max(1, flat.numel() // 1024)][:1024].float().cpu().numpy()
        digest.update(f"{name}{tuple(param.shape)}{param.dtype}".encode())
        digest.update(sample.tobytes())
    source = getattr(loaded.config, "_name_or_path", "") or loaded.name
    return f"{source}@{digest.hexdigest()[:16]}"


def _around(tokenizer) -> tuple[list[int], list[int]]:
    """The special ids the tokenizer puts before and after a text ([CLS] ... [SEP], <s> ...)."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a")["input_ids"]
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return full[:start], full[start + len(plain) :]
    return [], []


def windows(loaded: LoadedModel, corpus: AtlasCorpus, settings: Settings) -> Windows:
    """Token ids of consecutive windows of ``settings.window`` tokens; a decoder's start with its fixed
    first token (txviz.heads.corpus.sequence_prefix), so position 0 is the sink in every window."""
    tok = loaded.tokenizer
    if tok is None:
        raise UserError(f"{loaded.name} has no tokenizer: it cannot read a corpus.")
    size = min(settings.window, loaded.n_ctx)
    head, tail = _around(tok)
    prefix = sequence_prefix(loaded) if not head else ""
    head = [tok.convert_tokens_to_ids(prefix)] + head if prefix else head
    body = size - len(head) - len(tail)
    if body < max(1, settings.sink):
        raise UserError(f"Windows of {size} tokens leave no room for text after the model's special tokens.")
    ids = tok(corpus.text, add_special_tokens=False, verbose=False)["input_ids"]
    if not ids:
        raise UserError(f"{corpus.name} has no tokens: an atlas needs text to read.")
    out = np.full((-(-len(ids) // body), size), -1, dtype=np.int32)
    for i, start in enumerate(range(0, len(ids), body)):
        row = head + ids[start : start + body] + tail
        out[i, : len(row)] = row
    notice = f"Windows are {size} tokens, the model's context." if size < settings.window else ""
    return Windows(out, notice)


def features(tokenizer, ids: np.ndarray, causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Each window's target masks and |q - k| and ones as (B, T, T, M) float, and the rows where each
    target is measurable as (B, T, len(TARGETS)) bool: Head Detectors' definitions, window by window."""
    n = ids.shape[1]
    apart = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(np.float32)
    feats = np.empty((len(ids), n, n, len(TARGETS) + 2), dtype=np.float32)
    rows = np.empty((len(ids), n, len(TARGETS)), dtype=bool)
    for b, window in enumerate(ids.tolist()):
        tokens, _ = readable_tokens(tokenizer, window)
        found = det.text_targets(tokens, special_flags(tokenizer, window), causal, ids=window)
        for m, name in enumerate(TARGETS):
            feats[b, ..., m], rows[b, :, m] = found[name]
        feats[b, ..., DISTANCE], feats[b, ..., TOTAL] = apart, 1.0
    return torch.from_numpy(feats), torch.from_numpy(rows)


@dataclass(frozen=True)
class Fold:
    """A capture reduction's fold: each block of weights summed at once into every head's per-row target
    shares, distance and entropy, and each row's largest non-sink weight and its key; then dropped."""

    features: torch.Tensor  # (B, T, T, M): target masks, |q - k|, 1
    rows: torch.Tensor  # (B, T, len(TARGETS)) float: 1 where the target is measurable
    sink: int

    def __call__(self, state: dict | None, block: Block) -> dict:
        w, first = block.weights.float(), block.first  # (B, H, C, K)
        rows, keys = w.shape[-2:]
        # on the weights' device (the model's, where it is one device; .to is free when already there)
        feats = self.features[:, first : first + rows, :keys].to(w.device)
        on = torch.einsum("bhck,bckm->bhcm", w, feats)
        total = on[..., TOTAL : TOTAL + 1]
        share = on[..., : len(TARGETS)] / torch.where(total > 0, total, torch.ones(()))  # 0 on an empty row
        best, key = w[..., self.sink :].max(-1)
        found = {
            "shares": torch.einsum("bhcm,bcm->hm", share, self.rows[:, first : first + rows].to(w.device)),
            "distance": on[..., DISTANCE].sum((0, 2)),
            # attention.entropy's sum -w log w in one pass (xlogy: 0 log 0 = 0), 2.5x faster on a block;
            # it differs only below that function's floor, by at most 3e-11 nats a row
            "entropy": -torch.special.xlogy(w, w).sum((0, 2, 3)),
        }
        if state is None:
            return {**found, "best": [best], "key": [key + self.sink]}
        return {
            **{n: state[n] + v for n, v in found.items()},
            "best": [*state["best"], best],
            "key": [*state["key"], key + self.sink],
        }


def output_grams(loaded: LoadedModel, names: tuple[str, ...] | None) -> tuple[torch.Tensor | None, str]:
    """Per layer (H, D, D) Gram matrices W_O[h] W_O[h]^T of the output projection, or None and why not."""
    from txviz.whyattend.linear import CannotDecompose, matrix

    layout = cached_layout(loaded.model)
    if names is None or layout.record is None:
        return None, "the model map cannot place its output projection"
    grams = []
    try:
        for layer in range(loaded.n_layers):
            block = layout.block(loaded.model, layout.last_stack, layer)
            w_o = matrix(block.get_submodule(layout.record.attention.o), layout.in_out)[0]  # (H * D, D_model)
            per_head = w_o.reshape(loaded.n_heads, -1, w_o.shape[-1])
            grams.append(per_head @ per_head.transpose(1, 2))
    except (CannotDecompose, AttributeError, RuntimeError) as error:
        return None, f"its output projection cannot be read ({error})"
    return torch.stack(grams).to(loaded.device), ""


def attention_names(loaded: LoadedModel) -> tuple[str, ...] | None:
    """The self-attention place of every layer ("decoder.3.attn"), or None where the map cannot place them (then all)."""
    layout = cached_layout(loaded.model)
    try:
        return tuple(layout.place(layout.last_stack, i) for i in range(loaded.n_layers))
    except UnknownLayoutError:
        return None


def _remaining(done: int, total: int, elapsed: float) -> str:
    if not done:
        return "estimating the time left"
    left = elapsed / done * (total - done)
    return f"about {left / 60:.0f} min left" if left >= 90 else f"about {left:.0f} s left"


def build(
    loaded: LoadedModel,
    corpus: AtlasCorpus,
    settings: Settings = DEFAULT,
    progress: Progress | None = None,
) -> Atlas:
    """Every head's scores and top contexts over ``corpus`` (see the module docstring)."""
    if loaded.kind not in ("decoder", "encoder"):
        raise UserError(
            f"{loaded.name} is {loaded.kind}: the atlas reads text models with one stack of blocks."
        )
    check_size(loaded)
    start = time.perf_counter()
    cut = windows(loaded, corpus, settings)
    names = attention_names(loaded)
    grams, why = output_grams(loaded, names)
    scan = Scan(loaded, settings, cut.ids.shape[1], grams)
    lengths, total, done = cut.lengths, int(cut.lengths.sum()), 0
    order = np.argsort(-lengths, kind="stable")  # a short last window runs alone: no padding, no mask
    batches = [order[i : i + settings.batch] for i in range(0, len(order), settings.batch)]
    batches = [part for b in batches for part in np.split(b, np.flatnonzero(np.diff(lengths[b])) + 1)]
    for index in batches:
        if progress:
            progress(
                done / total,
                f"{done:,} of {total:,} tokens; {_remaining(done, total, time.perf_counter() - start)}",
            )
        n = int(lengths[index[0]])
        ids = cut.ids[index, :n]
        feats, rows = features(loaded.tokenizer, ids, loaded.is_causal)
        fold = Fold(feats.to(loaded.device), rows.float().to(loaded.device), min(settings.sink, n - 1))
        capture = CaptureSettings(
            record=frozenset({"head_out"}),
            reduction=Reduction(fold, chunk=n, modules=None if names is None else frozenset(names)),
        )
        outputs = ("last_logits",) if loaded.kind == "decoder" else ()
        result = run(loaded.model, capture, outputs, input_ids=torch.from_numpy(ids).long().to(loaded.device))
        records = [result.attention[name][-1] for name in (names or result.names())]
        scan.add(records, rows, torch.from_numpy(index))
        done += int(lengths[index].sum())
    if progress:
        progress(1.0, f"{total:,} tokens read in {time.perf_counter() - start:.0f} s")
    notices = [corpus.notice, cut.notice]
    if why:
        notices.append(f'"output" ranks each head by the norm of its output before the projection: {why}.')
    return Atlas(
        model=loaded.name,
        model_id=model_id(loaded),
        corpus=corpus.name,
        corpus_hash=corpus.hash,
        settings=settings,
        causal=loaded.is_causal,
        layers=loaded.n_layers,
        heads=loaded.n_heads,
        tokens=cut.ids,
        scores=scan.scores(),
        contexts=scan.contexts(),
        notices=tuple(n for n in notices if n),
        seconds=time.perf_counter() - start,
        format=schema.FORMAT,  # read now: a test may stand in for a newer txviz
    )
