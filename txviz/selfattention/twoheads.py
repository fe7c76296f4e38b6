"""Why several heads (Vaswani et al. 2017, §3.2.2): a toy task one softmax head cannot do and two heads can.

Each sequence holds L - 1 random symbols, each one of V; one position is marked subject, another
object, and a last query token (the L-th, with no symbol of its own) must name both symbols. The heads decide where to look from the roles only (queries
and keys read role embeddings) and carry the symbols only (values read symbol embeddings), and
the answer is a linear read-out of the attention output. One head's output is then the same mix
a * v_subject + b * v_object for every sequence: a linear read-out names the symbol with the
larger weight, never both. Two heads can each look at one. (When keys also see the symbols, one
head can hide which is which in content-dependent weights, and a wide read-out can decode that:
the toy keeps the roles and the contents apart so the limit is the softmax's, not the read-out's.)
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_model, save_model
from torch import nn

from txviz.core import paths

ASSETS_DIR = paths.ASSETS / "two_heads"
ROLES = ("·", "subject", "object", "query")  # role ids 0..3
NONE, SUBJECT, OBJECT, QUERY = range(4)
HEADS = (1, 2)
HELD_OUT_SEED = 12_345
ANSWERS = ("subject", "object", "both")


@dataclass(frozen=True)
class TwoHeadsConfig:
    """Everything that decides a run: the seed fixes the initial weights and every batch."""

    symbols: int = 8  # V
    length: int = 8  # L, the query token included
    d_model: int = 16  # split evenly between the heads, so both models have the same weights
    steps: int = 800
    batch_size: int = 256
    lr: float = 3e-3
    held_out: int = 4_000
    seed: int = 0


def task_text(config: TwoHeadsConfig = TwoHeadsConfig()) -> str:
    """The task in words, its counts taken from the config."""
    return (
        'Why heads at all: multi-head attention "allows the model to jointly attend to information from '
        "different representation subspaces at different positions. With a single attention head, "
        'averaging inhibits this" (Vaswani et al. 2017, §3.2.2). A toy task of ours shows it: '
        f"{config.length - 1} random symbols, each one of {config.symbols}, one marked *subject* and "
        "another *object*, then a query token with no symbol of its own "
        f"({config.length} tokens in all) that must name both symbols. Each head picks where to look from "
        "the roles and carries the symbols, and a linear read-out gives the answers. One head returns the "
        "same mix a·v_subject + b·v_object for every sequence, so a linear read-out names the symbol with "
        "the larger weight, not both; two heads (the same number of weights, D/2 dimensions each) look at "
        "one each."
    )


@dataclass(frozen=True)
class Batch:
    """Symbols and roles (n, L), and the two answers (n, 2): the subject's and the object's symbol."""

    symbols: torch.Tensor
    roles: torch.Tensor
    answers: torch.Tensor


def make_batch(n: int, seed: int, config: TwoHeadsConfig = TwoHeadsConfig()) -> Batch:
    """n sequences: random symbols, two distinct marked positions, the query token last."""
    generator = torch.Generator().manual_seed(seed)
    symbols = torch.randint(0, config.symbols, (n, config.length), generator=generator)
    order = torch.argsort(torch.rand(n, config.length - 1, generator=generator), dim=1)
    rows, subject, obj = torch.arange(n), order[:, 0], order[:, 1]
    roles = torch.full((n, config.length), NONE)
    roles[rows, subject], roles[rows, obj], roles[:, -1] = SUBJECT, OBJECT, QUERY
    symbols[:, -1] = 0  # the query token carries no symbol of its own
    return Batch(symbols, roles, torch.stack([symbols[rows, subject], symbols[rows, obj]], dim=1))


class HeadsToy(nn.Module):
    """One attention layer read from the query token, H heads, and a linear read-out of both answers."""

    def __init__(self, heads: int, config: TwoHeadsConfig = TwoHeadsConfig()):
        super().__init__()
        self.heads, d = heads, config.d_model
        self.symbol = nn.Embedding(config.symbols, d)
        self.role = nn.Embedding(len(ROLES), d)
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.readout = nn.Linear(d, 2 * config.symbols)  # the output projection and the answers in one map

    def forward(self, symbols: torch.Tensor, roles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (n, 2, V) for subject and object, and each head's weights (n, H, L) from the query."""
        n, length = symbols.shape
        d_head = self.query.out_features // self.heads
        role = self.role(roles)  # where to look: roles only
        q = self.query(role[:, -1]).view(n, self.heads, d_head)
        k = self.key(role).view(n, length, self.heads, d_head)
        v = self.value(self.symbol(symbols)).view(
            n, length, self.heads, d_head
        )  # what to carry: symbols only
        weights = torch.softmax(torch.einsum("nhd,nlhd->nhl", q, k) / d_head**0.5, dim=-1)
        out = torch.einsum("nhl,nlhd->nhd", weights, v).reshape(n, -1)  # heads concatenated
        return self.readout(out).view(n, 2, -1), weights


def accuracy(model: HeadsToy, batch: Batch) -> dict[str, float]:
    """Held-out accuracy of the subject, the object, and both at once."""
    with torch.no_grad():
        right = model(batch.symbols, batch.roles)[0].argmax(-1) == batch.answers
    return {
        "subject": float(right[:, 0].float().mean()),
        "object": float(right[:, 1].float().mean()),
        "both": float(right.all(1).float().mean()),
    }


def train(heads: int, config: TwoHeadsConfig = TwoHeadsConfig()) -> tuple[HeadsToy, dict]:
    """Adam on fresh batches each step (batch i uses seed config.seed + 1 + i); held-out scores after."""
    torch.manual_seed(config.seed)
    model = HeadsToy(heads, config)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    start = time.perf_counter()
    for step in range(config.steps):
        batch = make_batch(config.batch_size, config.seed + 1 + step, config)
        logits = model(batch.symbols, batch.roles)[0]
        loss = nn.functional.cross_entropy(logits.transpose(1, 2), batch.answers)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    seconds = time.perf_counter() - start
    model.eval()
    scores = accuracy(model, make_batch(config.held_out, HELD_OUT_SEED, config))
    return model, {**scores, "final_loss": float(loss.detach()), "seconds": round(seconds, 1)}


def save(
    models: dict[int, HeadsToy],
    metrics: dict[int, dict],
    config: TwoHeadsConfig,
    directory: Path = ASSETS_DIR,
):
    """Write heads_H.safetensors for each model and runs.json with the config and held-out scores."""
    directory.mkdir(parents=True, exist_ok=True)
    for heads, model in models.items():
        save_model(model, str(directory / f"heads_{heads}.safetensors"))
    summary = {
        "config": asdict(config),
        "held_out_seed": HELD_OUT_SEED,
        "chance": 1 / config.symbols,
        **{f"heads_{h}": m for h, m in metrics.items()},
    }
    (directory / "runs.json").write_text(json.dumps(summary, indent=1) + "\n")


def load(directory: Path = ASSETS_DIR) -> tuple[dict[int, HeadsToy], dict]:
    """The shipped models, in eval mode, and runs.json."""
    summary = json.loads((directory / "runs.json").read_text())
    config = TwoHeadsConfig(**summary["config"])
    models = {}
    for heads in HEADS:
        model = HeadsToy(heads, config)
        load_model(model, str(directory / f"heads_{heads}.safetensors"))
        models[heads] = model.eval()
    return models, summary


def score_rows(runs: dict) -> list[dict]:
    """runs.json as a table: each model's held-out accuracy, then chance."""
    rows = [
        {"model": f"{h} head{'s' * (h > 1)}", **{f"held-out {k}": runs[f"heads_{h}"][k] for k in ANSWERS}}
        for h in HEADS
    ]
    chance = runs["chance"]
    return rows + [
        {"model": "chance", "held-out subject": chance, "held-out object": chance, "held-out both": chance**2}
    ]


@dataclass(frozen=True)
class Example:
    """One held-out sequence read by both models."""

    labels: list[str]  # "symbol (role)" per position
    weights: dict[int, np.ndarray]  # heads -> (H, L)
    answers: tuple[int, int]
    predicted: dict[int, tuple[int, int]]


def example(models: dict[int, HeadsToy], index: int, config: TwoHeadsConfig = TwoHeadsConfig()) -> Example:
    """The index-th held-out sequence (the same seed as the scores), read by every model."""
    batch = make_batch(config.held_out, HELD_OUT_SEED, config)
    symbols, roles = batch.symbols[index : index + 1], batch.roles[index : index + 1]
    labels = [
        "query" if int(r) == QUERY else f"{int(s)}" + (f" ({ROLES[int(r)]})" if int(r) else "")
        for s, r in zip(symbols[0], roles[0], strict=True)
    ]
    weights, predicted = {}, {}
    with torch.no_grad():
        for heads, model in models.items():
            logits, w = model(symbols, roles)
            weights[heads] = w[0].numpy()
            predicted[heads] = tuple(int(p) for p in logits[0].argmax(-1))
    return Example(labels, weights, tuple(int(a) for a in batch.answers[0]), predicted)
