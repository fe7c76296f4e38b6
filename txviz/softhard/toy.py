"""A toy key-value retrieval task where soft and hard attention train differently."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from txviz.core import paths
from txviz.core.attention import entropy as row_entropy
from txviz.core.attention import hard, softmax
from txviz.core.threads import torch_threads

ASSETS_DIR = paths.ASSETS / "soft_hard"
METHODS = ("soft", "reinforce")
METHOD_LABELS = {
    "soft": "Soft attention (softmax, gradient descent)",
    "reinforce": "Hard attention (sampled one-hot choice, REINFORCE)",
}
SHORT_LABELS = {"soft": "Soft", "reinforce": "Hard (REINFORCE)"}
KEY_SYMBOLS = "abcdefghijklmnopqrstuvwxyz"
EVAL_SEED = 12345  # the held-out set is the same for every run, so curves compare


@dataclass(frozen=True)
class ToyConfig:
    """Task size, model width and optimiser settings of one training run."""

    n_keys: int = 26  # key symbols a ... z
    n_values: int = 10  # value symbols 0 ... 9
    n_pairs: int = 16  # key=value pairs stored in each example (the attended positions)
    d_model: int = 32
    steps: int = 300
    batch_size: int = 64
    lr: float = 2e-3
    entropy_bonus: float = 0.01  # keeps REINFORCE exploring early; unused by soft attention
    eval_every: int = 5
    eval_size: int = 512
    seed: int = 0

    def __post_init__(self) -> None:
        if not 2 <= self.n_pairs <= self.n_keys:
            raise ValueError(f"n_pairs must be between 2 and n_keys={self.n_keys}, got {self.n_pairs}")
        if not 1 <= self.n_keys <= len(KEY_SYMBOLS):
            raise ValueError(f"n_keys must be between 1 and {len(KEY_SYMBOLS)}, got {self.n_keys}")
        if not 2 <= self.n_values <= 10:
            raise ValueError(f"n_values must be between 2 and 10, got {self.n_values}")
        if self.steps < 1 or self.batch_size < 1 or self.eval_every < 1 or self.eval_size < 1:
            raise ValueError("steps, batch_size, eval_every and eval_size must be positive")
        if self.lr <= 0 or self.d_model < 1:
            raise ValueError("lr and d_model must be positive")


@dataclass(frozen=True)
class Batch:
    """Examples of the task: stored pairs and the queried keys (each a stored key once)."""

    keys: torch.Tensor  # (B, P) stored keys, distinct within an example
    values: torch.Tensor  # (B, P) stored values
    queries: torch.Tensor  # (B, P) queried keys, a permutation of the stored keys
    target_pos: torch.Tensor  # (B, P) position of the pair each query asks for
    targets: torch.Tensor  # (B, P) value stored at that position


def make_batch(config: ToyConfig, batch_size: int, generator: torch.Generator) -> Batch:
    """Random examples: P distinct keys with random values, queried in a random order."""
    # argsort of uniform noise gives independent random permutations per row
    keys = torch.rand(batch_size, config.n_keys, generator=generator).argsort(dim=1)
    keys = keys[:, : config.n_pairs]
    values = torch.randint(config.n_values, (batch_size, config.n_pairs), generator=generator)
    target_pos = torch.rand(batch_size, config.n_pairs, generator=generator).argsort(dim=1)
    queries = keys.gather(1, target_pos)
    targets = values.gather(1, target_pos)
    return Batch(keys, values, queries, target_pos, targets)


def eval_batch(config: ToyConfig) -> Batch:
    """The fixed held-out set every run is scored on."""
    generator = torch.Generator().manual_seed(EVAL_SEED)
    return make_batch(config, config.eval_size, generator)


def example_tokens(batch: Batch, index: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Readable labels of one example: queries like 'c?' and stored pairs like 'c=7'."""
    queries = tuple(f"{KEY_SYMBOLS[int(k)]}?" for k in batch.queries[index])
    pairs = tuple(
        f"{KEY_SYMBOLS[int(k)]}={int(v)}" for k, v in zip(batch.keys[index], batch.values[index], strict=True)
    )
    return queries, pairs


class KeyValueReader(nn.Module):
    """One attention head: each query key attends over the stored pairs and reads a value."""

    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        d = config.d_model
        self.key_embed = nn.Embedding(config.n_keys, d)  # shared by stored and queried keys
        self.value_embed = nn.Embedding(config.n_values, d)
        self.w_q = nn.Linear(d, d, bias=False)
        self.w_k = nn.Linear(d, d, bias=False)
        self.w_v = nn.Linear(d, d, bias=False)
        self.readout = nn.Linear(d, config.n_values)
        self.scale = 1.0 / math.sqrt(d)

    def scores(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Attention scores (B, Q, P) and the value vectors (B, P, d) of the stored pairs."""
        slots = self.key_embed(batch.keys) + self.value_embed(batch.values)  # (B, P, d)
        q = self.w_q(self.key_embed(batch.queries))  # (B, Q, d)
        k = self.w_k(slots)  # (B, P, d)
        return q @ k.transpose(1, 2) * self.scale, self.w_v(slots)  # (B, Q, P), (B, P, d)

    def read(self, weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Value logits (B, Q, V) from attention weights (B, Q, P) over values (B, P, d)."""
        return self.readout(weights @ values)


def attention_weights(model: KeyValueReader, batch: Batch, method: str) -> torch.Tensor:
    """Weights (B, Q, P) a trained model uses at test time: softmax for soft, argmax for hard."""
    with torch.no_grad():
        scores, _ = model.scores(batch)
    return softmax(scores) if method == "soft" else hard(scores)


def accuracy(model: KeyValueReader, batch: Batch, weighting: str) -> float:
    """Fraction of queries answered with the stored value, reading with 'soft' or 'hard' weights."""
    with torch.no_grad():
        scores, values = model.scores(batch)
        weights = softmax(scores) if weighting == "soft" else hard(scores)
        predicted = model.read(weights, values).argmax(dim=-1)
    return float((predicted == batch.targets).float().mean())


def _training_loss(
    model: KeyValueReader, batch: Batch, method: str, config: ToyConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss to minimise and the per-query cross-entropy (B, Q) of this step's reading."""
    scores, values = model.scores(batch)
    if method == "soft":
        # torch.softmax, not attention.softmax: that one cleans NaNs in place, which autograd forbids
        logits = model.read(torch.softmax(scores, dim=-1), values)
        ce = F.cross_entropy(logits.transpose(1, 2), batch.targets, reduction="none")
        return ce.mean(), ce
    # Hard attention: sample one pair per query. The choice has no gradient, so the readout
    # learns from the value it was handed and the scores learn by REINFORCE (score function).
    policy = torch.distributions.Categorical(logits=scores)
    choice = policy.sample()  # (B, Q)
    chosen = F.one_hot(choice, scores.shape[-1]).to(scores.dtype)
    logits = model.read(chosen, values)
    ce = F.cross_entropy(logits.transpose(1, 2), batch.targets, reduction="none")
    advantage = (ce - ce.mean()).detach()  # batch-mean baseline lowers the variance
    reinforce = (advantage * policy.log_prob(choice)).mean()
    return ce.mean() + reinforce - config.entropy_bonus * policy.entropy().mean(), ce


@dataclass(frozen=True)
class TrainedRun:
    """A finished run: the model, its curves on the held-out set and the final accuracy."""

    method: str
    config: ToyConfig
    model: KeyValueReader
    curves: dict[str, list[float]] = field(default_factory=dict)
    final_accuracy: float = 0.0
    seconds: float = 0.0


def _softmax_summary(model: KeyValueReader, batch: Batch) -> tuple[float, float]:
    """Mean softmax weight on the asked-for pair, and mean row entropy in nats."""
    with torch.no_grad():
        probs = softmax(model.scores(batch)[0])  # (B, Q, P)
    on_target = probs.gather(2, batch.target_pos.unsqueeze(2)).mean()
    return float(on_target), float(row_entropy(probs).mean())


def train(
    method: str,
    config: ToyConfig = ToyConfig(),
    progress: Callable[[int, int], None] | None = None,
) -> TrainedRun:
    """Train one model with soft attention or hard (REINFORCE) attention; fixed seed, one thread."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    held_out = eval_batch(config)
    curves: dict[str, list[float]] = {
        "step": [],
        "train_loss": [],
        "accuracy": [],
        "target_weight": [],
        "entropy": [],
    }
    start = time.perf_counter()
    with torch_threads(1):  # tiny model: faster, and fair to a shared CPU
        torch.manual_seed(config.seed)  # the same initial weights for both methods
        model = KeyValueReader(config)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        generator = torch.Generator().manual_seed(config.seed + 1)
        running_ce, running_n = 0.0, 0
        for step in range(1, config.steps + 1):
            loss, ce = _training_loss(model, make_batch(config, config.batch_size, generator), method, config)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running_ce, running_n = running_ce + float(ce.detach().mean()), running_n + 1
            if step % config.eval_every == 0 or step == config.steps:
                on_target, entropy = _softmax_summary(model, held_out)
                point = {
                    "step": step,
                    "train_loss": running_ce / running_n,  # mean since the last point
                    "accuracy": accuracy(model, held_out, _reading(method)),
                    "target_weight": on_target,
                    "entropy": entropy,
                }
                for name, value in point.items():
                    curves[name].append(round(float(value), 5))
                running_ce, running_n = 0.0, 0
            if progress is not None:
                progress(step, config.steps)
    model.eval()
    return TrainedRun(
        method=method,
        config=config,
        model=model,
        curves=curves,
        final_accuracy=curves["accuracy"][-1],
        seconds=time.perf_counter() - start,
    )


def train_both(
    config: ToyConfig = ToyConfig(), progress: Callable[[float, str], None] | None = None
) -> dict[str, TrainedRun]:
    """Every method in METHODS trained on ``config``; progress(fraction done, what) after each step."""
    runs = {}
    for i, method in enumerate(METHODS):

        def report(step: int, total: int, i: int = i, method: str = method) -> None:
            if progress is not None:
                progress((i + step / total) / len(METHODS), f"{method}: step {step}")

        runs[method] = train(method, config, progress=report)
    return runs


def _reading(method: str) -> str:
    """How a method reads at test time: soft weights for soft attention, argmax for hard."""
    return "soft" if method == "soft" else "hard"


def save_runs(runs: list[TrainedRun], directory: Path = ASSETS_DIR) -> None:
    """Write each model as METHOD.safetensors and all curves and accuracies to runs.json."""
    directory.mkdir(parents=True, exist_ok=True)
    summary: dict[str, object] = {"config": asdict(runs[0].config), "eval_seed": EVAL_SEED}
    held_out = eval_batch(runs[0].config)
    for run in runs:
        if run.config != runs[0].config:
            raise ValueError("all saved runs must share one config")
        tensors = {k: v.detach().contiguous() for k, v in run.model.state_dict().items()}
        save_file(tensors, str(directory / f"{run.method}.safetensors"))
        summary[run.method] = {
            "final_accuracy": run.final_accuracy,
            "accuracy_soft_reading": accuracy(run.model, held_out, "soft"),
            "accuracy_hard_reading": accuracy(run.model, held_out, "hard"),
            "seconds": round(run.seconds, 2),
            "curves": run.curves,
        }
    (directory / "runs.json").write_text(json.dumps(summary, indent=1) + "\n")


def load_runs(directory: Path = ASSETS_DIR) -> dict[str, TrainedRun]:
    """The shipped runs, keyed by method; raises FileNotFoundError if they are missing."""
    summary = json.loads((directory / "runs.json").read_text())
    config = ToyConfig(**summary["config"])
    runs = {}
    for method in METHODS:
        model = KeyValueReader(config)
        model.load_state_dict(load_file(str(directory / f"{method}.safetensors")))
        model.eval()
        entry = summary[method]
        runs[method] = TrainedRun(
            method=method,
            config=config,
            model=model,
            curves=entry["curves"],
            final_accuracy=entry["final_accuracy"],
            seconds=entry["seconds"],
        )
    return runs


def attention_map(run: TrainedRun, example: int = 0) -> tuple[np.ndarray, tuple, tuple]:
    """Test-time weights [query, pair] of one held-out example, with query and pair labels."""
    batch = eval_batch(run.config)
    if not 0 <= example < run.config.eval_size:
        raise ValueError(f"example must be between 0 and {run.config.eval_size - 1}")
    weights = attention_weights(run.model, batch, run.method)[example].numpy().astype(np.float32)
    queries, pairs = example_tokens(batch, example)
    return weights, queries, pairs


def attention_maps(
    runs: dict[str, TrainedRun], example: int = 0
) -> dict[str, tuple[np.ndarray, tuple, tuple]]:
    """Method label -> test-time attention map of one held-out example, for each run."""
    return {METHOD_LABELS[m]: attention_map(run, example) for m, run in runs.items()}


def curves_by_label(runs: dict[str, TrainedRun]) -> dict[str, dict[str, list[float]]]:
    """Method label -> that run's curves."""
    return {METHOD_LABELS[m]: run.curves for m, run in runs.items()}


def accuracy_rows(runs: dict[str, TrainedRun]) -> list[dict[str, object]]:
    """One row per run: how it trained and its held-out accuracy read soft and read hard."""
    rows = []
    for method, run in runs.items():
        held_out = eval_batch(run.config)
        rows.append(
            {
                "training": METHOD_LABELS[method],
                "steps": run.config.steps,
                "seconds": round(run.seconds, 1),
                "accuracy, read with softmax": accuracy(run.model, held_out, "soft"),
                "accuracy, read with argmax": accuracy(run.model, held_out, "hard"),
            }
        )
    return rows


def first_step_reaching(run: TrainedRun, level: float) -> int | None:
    """The first evaluated step whose held-out accuracy is at least ``level``, or None."""
    for step, value in zip(run.curves["step"], run.curves["accuracy"], strict=True):
        if value >= level:
            return int(step)
    return None


def describe(runs: dict[str, TrainedRun], level: float = 0.9) -> str:
    """One sentence per run, read off its curves: when it reached ``level`` and how sharp it ended."""
    parts = []
    for method, run in runs.items():
        step = first_step_reaching(run, level)
        reached = f"reached {level:.0%} at step {step}" if step else f"never reached {level:.0%}"
        parts.append(
            f"{SHORT_LABELS[method]} {reached}, final attention entropy {run.curves['entropy'][-1]:.3f} nats, "
            f"softmax weight on the right pair {run.curves['target_weight'][-1]:.3f}"
        )
    return ". ".join(parts) + "."
