"""BERT's objective: hide some words, predict only those (one loss term per masked word)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from txviz.core import paths
from txviz.core.capture import use_capture
from txviz.core.errors import UserError, require_kind
from txviz.core.loaded import LoadedModel
from txviz.core.running import run

MLM_DIR = paths.MODELS / "tiny-mlm"
SUBSET_SENTENCES = 40  # the fixed held-out subset whose accuracy txviz.json records


class ObjectiveError(UserError):
    """Bad input to an objective view, with a message fit for the user."""


def as_loaded(model, tokenizer) -> LoadedModel:
    """The tiny BERT and its tokenizer as a LoadedModel (an encoder with a masked-word head)."""
    return LoadedModel("tiny-mlm", "encoder", use_capture(model), tokenizer, None, "cpu")


def load_mlm(folder: Path = MLM_DIR) -> LoadedModel:
    """The tiny BERT with its masked-word head, and its tokenizer, from the project's folder."""
    from transformers import AutoTokenizer, BertForMaskedLM

    if not (folder / "model.safetensors").exists():
        raise ObjectiveError(f"No tiny BERT in {folder}: train it with `python -m txviz train mlm`.")
    model = BertForMaskedLM.from_pretrained(folder)
    model.eval()
    return as_loaded(model, AutoTokenizer.from_pretrained(folder))


def _special_ids(tokenizer) -> list[int]:
    return sorted(set(tokenizer.all_special_ids))


def masked_accuracy(loaded: LoadedModel, sentences: list[str], batch_size: int = 256) -> float:
    """Mask each word of each sentence in turn; the share predicted exactly (specials never guessed)."""
    require_kind(loaded, ("encoder",), "predict masked words")
    tokenizer = loaded.tokenizer
    rows, answers = [], []
    for sentence in sentences:
        ids = tokenizer(sentence)["input_ids"]
        for position in range(1, len(ids) - 1):  # not [CLS] or [SEP]
            masked = list(ids)
            masked[position] = tokenizer.mask_token_id
            rows.append((masked, position))
            answers.append(ids[position])
    banned = _special_ids(tokenizer)
    correct = 0
    for start in range(0, len(rows), batch_size):
        batch = rows[start : start + batch_size]
        width = max(len(ids) for ids, _ in batch)
        input_ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        attention = torch.zeros_like(input_ids)
        for i, (ids, _) in enumerate(batch):
            input_ids[i, : len(ids)] = torch.tensor(ids)
            attention[i, : len(ids)] = 1
        logits = run(loaded.model, outputs=("logits",), input_ids=input_ids, attention_mask=attention).logits
        picked = logits[torch.arange(len(batch)), torch.tensor([p for _, p in batch])]
        picked[:, banned] = float("-inf")
        guesses = picked.argmax(-1).tolist()
        correct += sum(g == a for g, a in zip(guesses, answers[start : start + batch_size], strict=True))
    return correct / len(rows)


def unigram_accuracy(train: list[str], heldout: list[str]) -> tuple[str, float]:
    """The baseline: always guess the most frequent training word; its held-out accuracy."""
    counts = Counter(word for sentence in train for word in sentence.split())
    guess = counts.most_common(1)[0][0]
    words = [word for sentence in heldout for word in sentence.split()]
    return guess, sum(word == guess for word in words) / len(words)


@dataclass(frozen=True)
class MaskedPrediction:
    """The tiny BERT's guesses at the masked positions of one sentence: one loss term each."""

    tokens: tuple[str, ...]  # with [CLS] and [SEP]
    masked: tuple[int, ...]  # positions hidden behind [MASK]
    top: tuple[tuple[tuple[str, float], ...], ...]  # per masked position: best guesses, probability
    true_probability: np.ndarray  # (n_masked,) p(actual word)

    @property
    def losses(self) -> np.ndarray:
        """-log p(actual word) at each masked position: the only terms of the loss."""
        return -np.log(np.maximum(self.true_probability, 1e-12))


def sentence_words(tokenizer, text: str, limit: int) -> tuple[list[str], str]:
    """The words the tiny BERT reads (its own pieces, lower case), cut to `limit` with a notice."""
    if not text or not text.strip():
        raise ObjectiveError("The sentence is empty: type a short sentence.")
    words = tokenizer.tokenize(text.strip().lower())
    if len(words) > limit:
        return words[:limit], f"The tiny BERT reads at most {limit} words; only the first {limit} are used."
    return words, ""


def predict_masked(loaded: LoadedModel, text: str, masked_words: list[int], k: int = 5) -> MaskedPrediction:
    """Hide the chosen words (0 = first word) and read the model's guesses for each."""
    require_kind(loaded, ("encoder",), "predict masked words")
    model, tokenizer = loaded.model, loaded.tokenizer
    words, _ = sentence_words(tokenizer, text, model.config.max_position_embeddings - 2)
    if not masked_words:
        raise ObjectiveError("Choose at least one word to mask.")
    if any(not 0 <= w < len(words) for w in masked_words):
        raise ObjectiveError(f"The sentence has {len(words)} words: mask words 1 to {len(words)}.")
    ids = [tokenizer.cls_token_id, *tokenizer.convert_tokens_to_ids(words), tokenizer.sep_token_id]
    positions = sorted({w + 1 for w in masked_words})
    masked = list(ids)
    for p in positions:
        masked[p] = tokenizer.mask_token_id
    logits = run(model, outputs=("logits",), input_ids=torch.tensor([masked])).logits[0]  # (T, V)
    logits[:, _special_ids(tokenizer)] = float("-inf")
    probs = torch.softmax(logits, dim=-1)
    top, true = [], []
    for p in positions:
        best = torch.topk(probs[p], k)
        guesses = tokenizer.convert_ids_to_tokens(best.indices.tolist())
        top.append(tuple(zip(guesses, best.values.tolist(), strict=True)))
        true.append(float(probs[p, ids[p]]))
    tokens = tuple(tokenizer.convert_ids_to_tokens(ids))
    return MaskedPrediction(tokens, tuple(positions), tuple(top), np.array(true))


def read_meta(folder: Path = MLM_DIR) -> dict:
    """The tiny BERT's txviz.json: what it was trained on and its measured accuracy."""
    import json

    path = folder / "txviz.json"
    return json.loads(path.read_text()) if path.exists() else {}


def accuracy_note(meta: dict) -> str:
    """One sentence on the tiny BERT's held-out accuracy against the unigram baseline."""
    if "heldout_masked_accuracy" not in meta:
        return "The tiny BERT's accuracy was not measured."
    return (
        f"The tiny BERT (2 layers, 4 heads, d 64) was trained here on sentences of a small grammar "
        f"(`python -m txviz train mlm`, {meta.get('training_steps')} steps). Masking each word of "
        f"{meta['heldout_sentences']} held-out sentences in turn, it guesses "
        f"{meta['heldout_masked_accuracy']:.1%} of {meta['heldout_words']} words; always guessing the "
        f"most frequent word ({meta['unigram_guess']!r}) gets {meta['unigram_baseline_accuracy']:.1%}. "
        "Words outside its 180-word vocabulary read as [UNK]."
    )


def prediction_rows(prediction: MaskedPrediction) -> list[dict]:
    """One row per masked word: the word, its probability, the loss term, the best guesses."""
    return [
        {
            "position": position,
            "hidden word": prediction.tokens[position],
            "p(hidden word)": float(prediction.true_probability[k]),
            "loss −log p": float(prediction.losses[k]),
            "best guesses": ", ".join(f"{w} ({p:.2f})" for w, p in prediction.top[k]),
        }
        for k, position in enumerate(prediction.masked)
    ]
