"""Training the decomposable-attention model and its bag-of-words baseline on the generated corpus."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import load_model, save_model

from txviz.core import paths
from txviz.entailment import corpus
from txviz.entailment.model import LABELS, BagOfWords, DecomposableAttention
from txviz.entailment.vectors import WordVectors

ASSETS_DIR = paths.ASSETS / "entailment"
SUBSET = 300  # the first held-out pairs, re-scored by the tests


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides a run; the seed fixes the corpus, the initial weights and the batches."""

    seed: int = 0
    train_pairs: int = 12_000
    held_out_pairs: int = 3_000
    hidden: int = 64
    d_word: int = 64
    dropout: float = 0.1
    steps: int = 4_000
    batch_size: int = 64
    learning_rate: float = 1e-3


@dataclass(frozen=True)
class Batch:
    """Padded word vectors, masks and labels of some pairs."""

    a: torch.Tensor
    mask_a: torch.Tensor
    b: torch.Tensor
    mask_b: torch.Tensor
    y: torch.Tensor

    def take(self, index) -> Batch:
        return Batch(self.a[index], self.mask_a[index], self.b[index], self.mask_b[index], self.y[index])


def _pad(sentences: list[list[str]], vectors: WordVectors) -> tuple[torch.Tensor, torch.Tensor]:
    longest = max(len(s) for s in sentences)
    out = torch.zeros(len(sentences), longest, vectors.dim)
    mask = torch.zeros(len(sentences), longest, dtype=torch.bool)
    for i, words in enumerate(sentences):
        out[i, : len(words)] = vectors(words)
        mask[i, : len(words)] = True
    return out, mask


def encode(pairs: list[corpus.Pair], vectors: WordVectors) -> Batch:
    """Word vectors of every premise and hypothesis, padded to the longest."""
    a, mask_a = _pad([p.premise.split() for p in pairs], vectors)
    b, mask_b = _pad([p.hypothesis.split() for p in pairs], vectors)
    return Batch(a, mask_a, b, mask_b, torch.tensor([LABELS.index(p.label) for p in pairs]))


@torch.no_grad()
def predict(model: torch.nn.Module, data: Batch) -> torch.Tensor:
    model.eval()
    return model(data.a, data.b, data.mask_a, data.mask_b).argmax(-1)


def accuracy(model: torch.nn.Module, data: Batch) -> float:
    return float((predict(model, data) == data.y).float().mean())


def fit(
    model: torch.nn.Module, data: Batch, config: TrainConfig, progress: Callable | None = None
) -> list[float]:
    """Adam on cross-entropy, `config.steps` mini-batches drawn by a seeded generator."""
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    losses = []
    for step in range(config.steps):
        model.train()
        batch = data.take(torch.randint(len(data.y), (config.batch_size,), generator=generator))
        loss = torch.nn.functional.cross_entropy(model(batch.a, batch.b, batch.mask_a, batch.mask_b), batch.y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        if progress and (step + 1) % 100 == 0:
            progress(step + 1, config.steps, losses[-1])
    return losses


def make_models(config: TrainConfig, dim: int) -> dict[str, torch.nn.Module]:
    torch.manual_seed(config.seed)
    attention = DecomposableAttention(dim, config.hidden, config.dropout, config.d_word)
    torch.manual_seed(config.seed)
    return {
        "attention": attention,
        "bag_of_words": BagOfWords(dim, config.hidden, config.dropout, config.d_word),
    }


def by_rule(model: torch.nn.Module, pairs: list[corpus.Pair], data: Batch) -> dict[str, float]:
    """Held-out accuracy per template rule."""
    right = (predict(model, data) == data.y).tolist()
    rules: dict[str, list[bool]] = {}
    for pair, ok in zip(pairs, right, strict=True):
        rules.setdefault(f"{pair.label}: {pair.rule}", []).append(ok)
    return {rule: round(sum(v) / len(v), 4) for rule, v in sorted(rules.items())}


def train_all(
    config: TrainConfig, vectors: WordVectors, progress: Callable | None = None
) -> tuple[dict, dict]:
    """Train both models on the same pairs and score them on the same held-out pairs: (models, metrics)."""
    train_pairs, held_out = corpus.split(config.train_pairs, config.held_out_pairs, config.seed)
    train_data, test_data = encode(train_pairs, vectors), encode(held_out, vectors)
    probe_data = encode(corpus.swapped_roles(), vectors)
    unseen_data = encode(corpus.unseen_words(seed=config.seed), vectors)
    models, metrics = make_models(config, vectors.dim), {}
    for name, model in models.items():
        start = time.perf_counter()
        losses = fit(
            model,
            train_data,
            config,
            (lambda s, t, loss, n=name: progress(n, s, t, loss)) if progress else None,
        )
        seconds = time.perf_counter() - start
        predicted = predict(model, probe_data).tolist()
        metrics[name] = {
            "heldout_accuracy": round(accuracy(model, test_data), 4),
            "heldout_subset_accuracy": round(accuracy(model, test_data.take(slice(0, SUBSET))), 4),
            "unseen_words_accuracy": round(accuracy(model, unseen_data), 4),
            "train_accuracy": round(accuracy(model, train_data), 4),
            "final_loss": round(sum(losses[-50:]) / len(losses[-50:]), 4),
            "train_seconds": round(seconds, 1),
            "by_rule": by_rule(model, held_out, test_data),
            "swapped_roles": {label: predicted.count(i) for i, label in enumerate(LABELS)},
        }
    vocabulary = sorted({w for p in train_pairs for w in (p.premise + " " + p.hypothesis).split()})
    return models, {"config": asdict(config), "vocabulary": vocabulary, **metrics}


def save(models: dict, metrics: dict, folder: Path = ASSETS_DIR) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, model in models.items():
        save_model(model, str(folder / f"{name}.safetensors"))
    meta = {
        "kind": "entailment",
        "description": "Decomposable attention (Parikh et al. 2016) and a bag-of-words baseline, trained by "
        "`python -m txviz train entailment` on a generated corpus, over MiniLM's frozen input embeddings.",
        "word_vectors": "minilm input embeddings, mean over word pieces, frozen",
        **metrics,
    }
    (folder / "txviz.json").write_text(json.dumps(meta, indent=2) + "\n")


def load(folder: Path = ASSETS_DIR, dim: int = 384) -> tuple[dict, dict]:
    """The shipped models and their metadata."""
    meta = json.loads((folder / "txviz.json").read_text())
    config = TrainConfig(**meta["config"])
    models = make_models(config, dim)
    for name, model in models.items():
        load_model(model, str(folder / f"{name}.safetensors"))
        model.eval()
    return models, meta
