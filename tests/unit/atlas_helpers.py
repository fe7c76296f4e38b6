"""Tiny models and a brute-force atlas from exact maps, for the Head Atlas's tests."""

from __future__ import annotations

import numpy as np
import torch
from tiny_models import WORDS, byte_bpe, tiny_model, word_tokenizer
from transformers import PreTrainedTokenizerFast

from txviz.atlas.atlas import Settings
from txviz.atlas.corpus import AtlasCorpus, of_text
from txviz.core.capture import CaptureSettings
from txviz.core.layouts import cached_layout
from txviz.core.running import run
from txviz.core.tokens import readable_tokens, special_flags
from txviz.heads import detectors as det
from txviz.models import LoadedModel
from txviz.whyattend.linear import matrix

SMALL = Settings(window=24, batch=3, top_k=5, deciles=4, per_decile=2, sink=1, seed=3)


def text(n_sentences: int = 40, seed: int = 0) -> str:
    """Sentences of random words with commas and full stops: repeats and punctuation to find."""
    rng = np.random.default_rng(seed)
    parts = []
    for i in range(n_sentences):
        words = list(rng.choice(WORDS, size=int(rng.integers(3, 8))))
        if i % 3 == 0:
            words[1] += ","
        parts.append(" ".join(words).capitalize() + ".")
    return " ".join(parts)


def corpus(n_sentences: int = 40, seed: int = 0) -> AtlasCorpus:
    return of_text("tiny text", text(n_sentences, seed))


def bpe() -> PreTrainedTokenizerFast:
    return byte_bpe([text(40, seed) for seed in range(3)], 200, bos_token="<s>", model_max_length=2048)


def decoder(seed: int = 0, **sizes) -> LoadedModel:
    tok = bpe()
    return LoadedModel("tiny", "decoder", tiny_model("llama", len(tok), seed=seed, **sizes), tok, None, "cpu")


def encoder() -> LoadedModel:
    tok = word_tokenizer([*WORDS, ",", "."])
    model = tiny_model("bert", len(tok), max_position_embeddings=64)
    return LoadedModel("tiny-bert", "encoder", model, tok, None, "cpu")


def exact(loaded: LoadedModel, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One window's exact weights [L, H, T, T] and head outputs through W_O, norms [L, H, T]."""
    result = run(
        loaded.model,
        CaptureSettings(record=frozenset({"weights", "head_out"})),
        input_ids=torch.as_tensor(np.asarray(ids)[None]),
    )
    weights = result.stack("weights").astype(np.float64)
    heads = result.stack("head_out")  # [L, H, T, D]
    layout = cached_layout(loaded.model)
    if layout.record is None:  # the map cannot place W_O: the norm before the projection
        return weights, np.linalg.norm(heads, axis=-1)
    norms = []
    for layer in range(len(heads)):
        block = layout.block(loaded.model, layout.last_stack, layer)
        out = block.get_submodule(layout.record.attention.o)
        w_o = matrix(out, layout.in_out)[0].numpy()  # (H * D, D_model)
        per_head = w_o.reshape(heads.shape[1], heads.shape[-1], -1)
        norms.append(np.linalg.norm(np.einsum("htd,hde->hte", heads[layer], per_head), axis=-1))
    return weights, np.stack(norms)


def brute(loaded: LoadedModel, windows: np.ndarray, settings: Settings) -> dict:
    """Every metric from exact maps with Head Detectors' functions, and every row's criterion values."""
    causal = loaded.is_causal
    parts: dict[str, list] = {
        n: []
        for n in ("previous_token", "first_token", "punctuation", "duplicate_token", "induction", "local")
    }
    entropy, distance, lengths, rows = [], [], [], {"attention": [], "output": []}
    for w_index, window in enumerate(windows):
        ids = [int(i) for i in window if i >= 0]
        weights, norms = exact(loaded, np.array(ids))
        tokens, _ = readable_tokens(loaded.tokenizer, ids)
        special = special_flags(loaded.tokenizer, ids)
        for which in ("text", "repeats"):
            for name, mass in det.text_masses(weights, tokens, special, causal, ids=ids, which=which).items():
                if name in parts:
                    parts[name].append(mass)
        t, r = det.text_targets(tokens, special, causal, ids=ids)["local"]
        parts["local"].append(det.target_mass(weights, t, r))
        e, d = det.head_entropy_distance(weights)
        entropy.append(e * len(ids))
        distance.append(d * len(ids))
        lengths.append(len(ids))
        tail = weights[..., settings.sink :]
        for q in range(len(ids)):
            if causal and q < settings.sink:
                continue  # a causal row before the sinks sees only them: no context for either criterion
            key = tail[:, :, q].argmax(-1) + settings.sink
            rows["attention"].append((tail[:, :, q].max(-1), w_index, q, key))
            rows["output"].append((norms[:, :, q], w_index, q, None))
    shape = weights.shape[:2]
    scores = {n: det.mean_score(p, shape) for n, p in parts.items()}
    scores["entropy"] = sum(entropy) / sum(lengths)
    scores["distance"] = sum(distance) / sum(lengths)
    return {"scores": scores, "rows": rows, "shape": shape}
