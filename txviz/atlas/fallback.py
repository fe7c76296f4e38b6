"""A stand-in for the atlas's corpora and builder, used only where txviz.atlas.corpus or .store is absent.

It builds from exact attention maps, one window per forward pass, and keeps every row's largest
non-sink weight per head, so it suits small corpora; scores that need repeated sequences or the
tokens' classes (induction, duplicate token, punctuation) stay blank.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from txviz.atlas.atlas import Atlas, Contexts, Metric, Settings
from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError
from txviz.core.running import run
from txviz.heads import corpus as head_corpus

MAX_TOKENS = 20_000  # the stand-in keeps per-row values in memory: a corpus is cut here
MAX_BYTES = 2_000_000
LOCAL = 3  # keys within this many positions of the query count as local

METRICS = (
    Metric("previous_token", "Previous token", "mean weight on the key just before the query"),
    Metric("induction", "Induction", "not measured by this builder"),
    Metric("duplicate_token", "Duplicate token", "not measured by this builder"),
    Metric("first_token", "First token (sink)", "mean weight on the window's first token"),
    Metric("punctuation", "Punctuation", "not measured by this builder"),
    Metric(
        "local",
        "Local share",
        f"mean weight within {LOCAL} positions of the query",
        "keys after the query count too",
    ),  # fmt: skip
    Metric(
        "distance",
        "Mean distance",
        "mean |query - key| in positions, weighted by attention",
        "keys after the query count too",
    ),  # fmt: skip
    Metric("entropy", "Entropy", "mean entropy of a query's attention row, in nats"),
)


class AtlasCorpusError(UserError):
    """The corpus cannot be used; the message says why."""


@dataclass(frozen=True)
class AtlasCorpus:
    name: str
    text: str
    hash: str
    notice: str = ""


def _corpus(name: str, data: bytes, notice: str = "") -> AtlasCorpus:
    return AtlasCorpus(name, data.decode("utf-8"), hashlib.sha256(data).hexdigest(), notice)


def shipped() -> dict[str, Callable[[], AtlasCorpus]]:
    text = "\n\n".join(head_corpus.DEFAULT_TEXTS).encode()
    return {"Shipped examples": lambda: _corpus("Shipped examples", text)}


def from_upload(name: str, data: bytes) -> AtlasCorpus:
    if not data.strip():
        raise AtlasCorpusError(f"{name} is empty: choose a text file with some text in it.")
    if b"\x00" in data[:8192]:
        raise AtlasCorpusError(f"{name} looks binary: choose a UTF-8 text file.")
    notice = ""
    if len(data) > MAX_BYTES:
        data, notice = data[:MAX_BYTES], f"{name} was cut to its first {MAX_BYTES:,} bytes."
    try:
        return _corpus(name, data.decode("utf-8", errors="ignore").encode(), notice)
    except UnicodeDecodeError as error:  # pragma: no cover - errors="ignore" decodes anything
        raise AtlasCorpusError(f"{name} is not UTF-8 text.") from error


def windows(loaded, text: str, size: int) -> tuple[np.ndarray, str]:
    """The corpus's token ids cut into windows of ``size`` (-1 past the end), and a notice when cut."""
    ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
    notice = ""
    if len(ids) > MAX_TOKENS:
        ids, notice = ids[:MAX_TOKENS], f"The corpus was cut to its first {MAX_TOKENS:,} tokens."
    if len(ids) < 2:
        raise AtlasCorpusError("The corpus has fewer than two tokens: an attention row needs a key.")
    count = -(-len(ids) // size)
    tokens = np.full((count, size), -1, dtype=np.int32)
    tokens.ravel()[: len(ids)] = ids
    return tokens, notice


def _row_scores(w: np.ndarray, sink: int) -> dict[str, np.ndarray]:
    """Per head sums over the window's queries, and each row's largest non-sink weight and its key."""
    _, _, n, _ = w.shape
    q, k = np.arange(n)[:, None], np.arange(n)[None, :]
    sums = {
        "previous_token": w[:, :, 1:, :][..., np.arange(n - 1), np.arange(n - 1)].sum(-1),
        "first_token": w[..., 0].sum(-1),
        "local": (w * (np.abs(q - k) <= LOCAL)).sum((-1, -2)),
        "distance": (w * np.abs(q - k)).sum((-1, -2)),
        "entropy": -(w * np.log(np.clip(w, 1e-12, None))).sum((-1, -2)),
    }
    rest = w[..., sink:] if n > sink else np.zeros_like(w[..., :1])
    return sums, rest.max(-1), rest.argmax(-1) + sink


def build(loaded, corpus, settings: Settings | None = None, progress=None) -> Atlas:
    """An atlas from exact maps; the scores are means over every query of every window."""
    start, settings = time.perf_counter(), settings or Settings()
    tokens, cut = windows(loaded, corpus.text, min(settings.window, loaded.n_ctx or settings.window))
    layers, heads = loaded.n_layers, loaded.n_heads
    sums = {m.name: np.zeros((layers, heads)) for m in METRICS}
    counts = {"previous_token": 0, "other": 0}
    best, keys, where = [], [], []
    for index, row in enumerate(tokens):
        ids = row[row >= 0]
        found = run(loaded.model, CaptureSettings(record={"weights"}),
                    input_ids=torch.tensor([ids.tolist()], device=loaded.device))  # fmt: skip
        w = found.stack("weights").astype(np.float64)  # [layer, head, Q, K]
        window_sums, value, key = _row_scores(w, settings.sink)
        for name, total in window_sums.items():
            sums[name] += total
        counts["previous_token"] += len(ids) - 1
        counts["other"] += len(ids)
        best.append(value.reshape(layers, heads, -1))
        keys.append(key.reshape(layers, heads, -1))
        where += [(index, q) for q in range(len(ids))]
        if progress:
            progress((index + 1) / len(tokens), f"Window {index + 1} of {len(tokens)}")
    scores = {
        m.name: (
            sums[m.name] / max(counts["previous_token" if m.name == "previous_token" else "other"], 1)
        ).astype(np.float32)
        for m in METRICS
    }
    for name in ("induction", "duplicate_token", "punctuation"):
        scores[name] = np.full((layers, heads), np.nan, dtype=np.float32)
    contexts = {
        "attention": _top(np.concatenate(best, -1), np.concatenate(keys, -1), np.array(where), settings)
    }
    notices = ("Built by the stand-in builder: induction, duplicate-token and punctuation scores are blank.",)
    return Atlas(
        loaded.name, loaded.name, corpus.name, corpus.hash, settings, loaded.kind == "decoder", layers,
        heads, tokens, scores, contexts, notices + ((cut,) if cut else ()), time.perf_counter() - start,
    )  # fmt: skip


def _top(values: np.ndarray, keys: np.ndarray, where: np.ndarray, settings: Settings) -> Contexts:
    """The k largest rows per head, and a seeded sample from each decile band of the rest."""
    layers, heads, _ = values.shape
    k, bands, per = settings.top_k, settings.deciles, settings.per_decile
    top = np.full((layers, heads, k), -1, dtype=np.int32)
    band = np.full((layers, heads, bands, per), -1, dtype=np.int32)
    rng = np.random.default_rng(settings.seed)
    for layer in range(layers):
        for head in range(heads):
            order = np.argsort(-values[layer, head], kind="stable")
            top[layer, head, : min(k, len(order))] = order[:k]
            for b, members in enumerate(np.array_split(order[k:], bands)):
                if len(members):
                    band[layer, head, b, : min(per, len(members))] = rng.choice(
                        members, min(per, len(members)), replace=False
                    )

    def pick(rows: np.ndarray):
        safe = np.clip(rows, 0, None)
        li, hi = np.indices(rows.shape[:2])
        extra = (None,) * (rows.ndim - 2)
        li, hi = li[(..., *extra)], hi[(..., *extra)]
        fields = (where[safe, 0], where[safe, 1], keys[li, hi, safe], values[li, hi, safe])
        return [
            np.where(rows >= 0, f, -1).astype(t)
            for f, t in zip(fields, (np.int32,) * 3 + (np.float32,), strict=True)
        ]

    return Contexts("attention", *pick(top), *pick(band))
