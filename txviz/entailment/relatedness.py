"""Decomposable attention retargeted to relatedness (probml 15.4.6: the same model scores STS-B pairs).

The pairs come from the entailment corpus's scenes. A second scene changes each part of the first
(who, doing what, how they look, where) or keeps it, and the gold score is 5 times a weighted
agreement of the parts: the same word or a synonym agrees fully, a more general word
(person for man, moving for running) by 0.6, a part only one sentence names by 0.5, another word
not at all. So "a man is running" / "the guy is running" scores 5, though word overlap
sees one content word of three in common.
The model is the entailment page's attend, compare, aggregate with one output instead of three,
trained on squared error; the baselines are the training mean and a line fitted to word overlap.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_model, save_model
from torch import nn

from txviz.core import paths
from txviz.entailment import corpus
from txviz.entailment.model import DecomposableAttention
from txviz.entailment.train import _pad

ASSETS_DIR = paths.ASSETS / "relatedness"
WEIGHTS = {"subject": 0.35, "activity": 0.35, "adjective": 0.15, "place": 0.15}
GENERAL, ONE_SIDED = 0.6, 0.5
FUNCTION_WORDS = frozenset({"a", "an", "the", "is", "in", "on", "at"})


@dataclass(frozen=True)
class RelatednessConfig:
    """Everything that decides a run; the seed fixes the pairs, the initial weights and the batches."""

    seed: int = 0
    train_pairs: int = 6_000
    held_out_pairs: int = 1_000
    hidden: int = 64
    d_word: int = 64
    steps: int = 1_500
    batch_size: int = 64
    learning_rate: float = 1e-3


@dataclass(frozen=True)
class ScoredPair:
    """Two sentences and their gold relatedness, 0 to 5."""

    first: str
    second: str
    score: float


def _change(rng: random.Random, kind: str, value: str | None) -> tuple[str | None, float]:
    """Part of the second scene and how much it agrees with the first's (1, GENERAL, ONE_SIDED or 0)."""
    options = {
        "subject": list(corpus.SUBJECTS),
        "activity": list(corpus.ACTIVITIES),
        "adjective": list(corpus.ADJECTIVES),
        "place": list(corpus.PLACES),
    }[kind]
    move = rng.choice(("keep", "keep", "similar", "other", "other"))
    if value is None:  # the first sentence does not say: keep silent, or add one
        return (None, 1.0) if move != "other" else (rng.choice(options), ONE_SIDED)
    if move == "keep":
        return value, 1.0
    if move == "similar":
        if kind == "subject":
            hypernym, synonyms = corpus.SUBJECTS[value]
            return (rng.choice(synonyms), 1.0) if rng.random() < 0.5 else (hypernym, GENERAL)
        if kind == "activity" and corpus.ACTIVITIES[value][0]:
            return corpus.ACTIVITIES[value][0], GENERAL
        if kind == "activity":
            return value, 1.0  # no more general activity to name
        return None, ONE_SIDED  # leave it out
    return rng.choice([o for o in options if o != value]), 0.0


def make_pair(rng: random.Random) -> ScoredPair:
    """A random scene, a changed copy, and the weighted agreement of their parts times 5."""
    first = corpus.random_scene(rng)
    parts, score = {}, 0.0
    for kind, weight in WEIGHTS.items():
        parts[kind], agree = _change(rng, kind, getattr(first, kind))
        score += weight * agree
    second = corpus.Scene(parts["subject"], parts["activity"], parts["adjective"], parts["place"])
    return ScoredPair(first.sentence(), second.sentence("the"), round(5 * score, 3))


def generate(count: int, seed: int, exclude: set | None = None) -> list[ScoredPair]:
    """`count` distinct pairs, none in `exclude`, no word kept out of the entailment training."""
    rng, seen, pairs = random.Random(seed), set(exclude or ()), []
    while len(pairs) < count:
        pair = make_pair(rng)
        words = set((pair.first + " " + pair.second).split())
        if (pair.first, pair.second) not in seen and corpus.UNSEEN.isdisjoint(words):
            seen.add((pair.first, pair.second))
            pairs.append(pair)
    return pairs


def split(config: RelatednessConfig) -> tuple[list[ScoredPair], list[ScoredPair]]:
    first = generate(config.train_pairs, config.seed)
    return first, generate(config.held_out_pairs, config.seed + 1, {(p.first, p.second) for p in first})


def overlap(pair: ScoredPair) -> float:
    """Jaccard overlap of the two sentences' content words (articles, "is" and prepositions left out)."""
    a = set(pair.first.split()) - FUNCTION_WORDS
    b = set(pair.second.split()) - FUNCTION_WORDS
    return len(a & b) / len(a | b)


class Relatedness(DecomposableAttention):
    """Attend, compare, aggregate as for entailment; h ends in one number, the score."""

    def __init__(self, d_embed: int, hidden: int = 64, d_word: int = 64):
        super().__init__(d_embed, hidden, 0.0, d_word)
        self.h[-1] = nn.Linear(hidden, 1)

    def forward(self, a, b, mask_a, mask_b):
        return super().forward(a, b, mask_a, mask_b)[:, 0]


def _encode(pairs: list[ScoredPair], vectors):
    a, mask_a = _pad([p.first.split() for p in pairs], vectors)
    b, mask_b = _pad([p.second.split() for p in pairs], vectors)
    return a, mask_a, b, mask_b, torch.tensor([p.score for p in pairs])


def errors(predicted: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Root mean squared error, mean absolute error and Pearson's r (STS-B's measure)."""
    r = float(np.corrcoef(predicted, gold)[0, 1]) if predicted.std() > 0 else 0.0
    return {
        "rmse": round(float(np.sqrt(np.mean((predicted - gold) ** 2))), 4),
        "mae": round(float(np.mean(np.abs(predicted - gold))), 4),
        "pearson": round(r, 4),
    }


@torch.no_grad()
def predict(model: Relatedness, pairs: list[ScoredPair], vectors) -> np.ndarray:
    model.eval()
    a, mask_a, b, mask_b, _ = _encode(pairs, vectors)
    return model(a, b, mask_a, mask_b).clamp(0, 5).numpy()


def train(config: RelatednessConfig, vectors) -> tuple[Relatedness, dict]:
    """Adam on squared error; the baselines fitted on the same training pairs, all scored on the same held-out pairs."""
    train_pairs, held_out = split(config)
    a, mask_a, b, mask_b, y = _encode(train_pairs, vectors)
    torch.manual_seed(config.seed)
    model = Relatedness(vectors.dim, config.hidden, config.d_word)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    generator = torch.Generator().manual_seed(config.seed)
    start = time.perf_counter()
    for _ in range(config.steps):
        model.train()
        i = torch.randint(len(y), (config.batch_size,), generator=generator)
        loss = nn.functional.mse_loss(model(a[i], b[i], mask_a[i], mask_b[i]), y[i])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    seconds = time.perf_counter() - start
    gold_train = np.array([p.score for p in train_pairs])
    gold = np.array([p.score for p in held_out])
    slope, intercept = np.polyfit([overlap(p) for p in train_pairs], gold_train, 1)
    by_overlap = np.clip(intercept + slope * np.array([overlap(p) for p in held_out]), 0, 5)
    return model, {
        "config": asdict(config),
        "heldout": {
            "decomposable attention": errors(predict(model, held_out, vectors), gold),
            "word overlap, a fitted line": errors(by_overlap, gold),
            "the training mean": errors(np.full_like(gold, gold_train.mean()), gold),
        },
        "overlap_line": [round(float(intercept), 4), round(float(slope), 4)],
        "train_mean": round(float(gold_train.mean()), 4),
        "seconds": round(seconds, 1),
    }


def save(model: Relatedness, runs: dict, directory: Path = ASSETS_DIR) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    save_model(model, str(directory / "relatedness.safetensors"))
    (directory / "runs.json").write_text(json.dumps(runs, indent=1) + "\n")


def load(directory: Path = ASSETS_DIR, dim: int = 384) -> tuple[Relatedness, dict]:
    """The shipped model and runs.json."""
    runs = json.loads((directory / "runs.json").read_text())
    config = RelatednessConfig(**runs["config"])
    model = Relatedness(dim, config.hidden, config.d_word)
    load_model(model, str(directory / "relatedness.safetensors"))
    model.eval()
    return model, runs


def score_rows(runs: dict) -> list[dict]:
    return [{"scorer": name, **numbers} for name, numbers in runs["heldout"].items()]


def examples(model: Relatedness, runs: dict, vectors, count: int = 8) -> list[dict]:
    """The first held-out pairs: gold, the model's score, and the overlap line's."""
    held_out = split(RelatednessConfig(**runs["config"]))[1][:count]
    predicted = predict(model, held_out, vectors)
    intercept, slope = runs["overlap_line"]
    return [
        {
            "first": p.first,
            "second": p.second,
            "gold": p.score,
            "decomposable attention": round(float(s), 2),
            "word overlap": round(float(np.clip(intercept + slope * overlap(p), 0, 5)), 2),
        }
        for p, s in zip(held_out, predicted, strict=True)
    ]


@torch.no_grad()
def score(model: Relatedness, a: torch.Tensor, b: torch.Tensor) -> float:
    """The relatedness, 0 to 5, of one pair of word-vector sequences (m, d) and (n, d)."""
    model.eval()
    ones_a, ones_b = torch.ones(1, len(a), dtype=torch.bool), torch.ones(1, len(b), dtype=torch.bool)
    return float(model(a[None], b[None], ones_a, ones_b).clamp(0, 5)[0])
