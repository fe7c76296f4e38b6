"""A mixture of experts in place of the feed-forward network (Switch Transformer, Fedus et al. 2021).

A router scores E expert FFNs for each input, keeps the top one and scales its output by the
router's probability: each input pays for one FFN, the layer holds E of them. The toy regression
task has four regions, each with its own function, so experts can split the work. Three models
train on the same batches: a dense FFN with the compute of one expert, the mixture, and a dense
FFN as wide as all experts together (the same number of weights as the mixture).
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

ASSETS_DIR = paths.ASSETS / "moe"
CENTRES = torch.tensor([[-2.0, -2.0], [-2.0, 2.0], [2.0, -2.0], [2.0, 2.0]])
REGIONS = ("x<0, y<0: sin 2x", "x<0, y>0: cos 2y", "x>0, y<0: xy/2", "x>0, y>0: |x| - |y|")
MODELS = ("dense, one expert's width", "mixture of experts (top-1)", "dense, all experts' width")
HELD_OUT_SEED = 999
GSHARD = (
    "GShard (Lepikhin et al. 2020), the design Switch simplifies, sends each token to its top two experts "
    "(the second only with a probability set by its gate value) and adds their outputs weighted by the "
    "gates; Switch keeps the top one, halving the expert work and traffic per token."
)


@dataclass(frozen=True)
class MoEConfig:
    """Everything that decides a run: the seed fixes the initial weights and every batch."""

    experts: int = 4
    hidden: int = 8  # per expert; the small dense model has this width, the wide one experts x this
    steps: int = 2_000
    batch_size: int = 256
    lr: float = 1e-2
    balance: float = 0.5  # weight of the load-balancing loss
    held_out: int = 4_000
    seed: int = 0


def region(x: torch.Tensor) -> torch.Tensor:
    """(n,) which quadrant each point is in: 0..3 as in REGIONS."""
    return (x[:, 0] > 0).long() * 2 + (x[:, 1] > 0).long()


def make_data(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Points (n, 2) around four centres and targets (n, 1): each quadrant's own function."""
    generator = torch.Generator().manual_seed(seed)
    centre = torch.randint(0, 4, (n,), generator=generator)
    x = CENTRES[centre] + 0.8 * torch.randn(n, 2, generator=generator)
    u, v = x[:, 0], x[:, 1]
    every = torch.stack([torch.sin(2 * u), torch.cos(2 * v), u * v / 2, u.abs() - v.abs()], dim=1)
    return x, every[torch.arange(n), region(x)][:, None]


def ffn(hidden: int) -> nn.Sequential:
    """One feed-forward network, 2 -> hidden -> 1."""
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 1))


@dataclass(frozen=True)
class Routed:
    """A mixture's output and how it routed the batch."""

    output: torch.Tensor  # (n, 1)
    gates: torch.Tensor  # (n, E) router probabilities
    chosen: torch.Tensor  # (n,) the expert each input went to
    balance_loss: torch.Tensor  # E * sum_i f_i P_i: 1 when perfectly balanced


def balance_loss(gates: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """Switch Transformer's auxiliary loss E * sum_i f_i P_i (f: share of inputs sent, P: mean gate)."""
    experts = gates.shape[1]
    share = torch.bincount(chosen, minlength=experts).float() / len(chosen)
    return experts * (share * gates.mean(0)).sum()


class MixtureOfExperts(nn.Module):
    """A router and E expert FFNs; each input goes to its top-1 expert, scaled by that expert's gate."""

    def __init__(self, experts: int, hidden: int):
        super().__init__()
        self.router = nn.Linear(2, experts)
        self.experts = nn.ModuleList(ffn(hidden) for _ in range(experts))

    def route(self, x: torch.Tensor) -> Routed:
        gates = torch.softmax(self.router(x), dim=-1)
        chosen = gates.argmax(-1)
        output = torch.zeros(len(x), 1)
        for i, expert in enumerate(self.experts):
            picked = chosen == i  # each expert runs on its own inputs only: that is the saving
            if picked.any():
                output[picked] = gates[picked, i : i + 1] * expert(x[picked])
        return Routed(output, gates, chosen, balance_loss(gates, chosen))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.route(x).output


def build(name: str, config: MoEConfig) -> nn.Module:
    """One of MODELS, freshly initialised."""
    if name == MODELS[1]:
        return MixtureOfExperts(config.experts, config.hidden)
    return ffn(config.hidden if name == MODELS[0] else config.hidden * config.experts)


def weights(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def train(name: str, config: MoEConfig = MoEConfig()) -> tuple[nn.Module, dict]:
    """Adam on fresh batches (batch i has seed config.seed + 1 + i); held-out mean squared error after."""
    torch.manual_seed(config.seed)
    model = build(name, config)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    start = time.perf_counter()
    for step in range(config.steps):
        x, y = make_data(config.batch_size, config.seed + 1 + step)
        if isinstance(model, MixtureOfExperts):
            routed = model.route(x)
            loss = ((routed.output - y) ** 2).mean() + config.balance * routed.balance_loss
        else:
            loss = ((model(x) - y) ** 2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    seconds = time.perf_counter() - start
    model.eval()
    return model, {
        "held_out_mse": held_out_mse(model, config),
        "weights": weights(model),
        "seconds": round(seconds, 1),
    }


def held_out_mse(model: nn.Module, config: MoEConfig) -> float:
    x, y = make_data(config.held_out, HELD_OUT_SEED)
    with torch.no_grad():
        return float(((model(x) - y) ** 2).mean())


def save(
    models: dict[str, nn.Module], metrics: dict[str, dict], config: MoEConfig, directory: Path = ASSETS_DIR
):
    """Write model_I.safetensors for each of MODELS and runs.json (config, held-out scores, baseline)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(MODELS):
        save_model(models[name], str(directory / f"model_{i}.safetensors"))
    _, y = make_data(config.held_out, HELD_OUT_SEED)
    summary = {
        "config": asdict(config),
        "held_out_seed": HELD_OUT_SEED,
        "predict_the_mean_mse": float(y.var(unbiased=False)),
        "models": {name: metrics[name] for name in MODELS},
    }
    (directory / "runs.json").write_text(json.dumps(summary, indent=1) + "\n")


def load(directory: Path = ASSETS_DIR) -> tuple[dict[str, nn.Module], dict]:
    """The shipped models in eval mode, and runs.json."""
    summary = json.loads((directory / "runs.json").read_text())
    config = MoEConfig(**summary["config"])
    models = {}
    for i, name in enumerate(MODELS):
        model = build(name, config)
        load_model(model, str(directory / f"model_{i}.safetensors"))
        models[name] = model.eval()
    return models, summary


@dataclass(frozen=True)
class Routing:
    """How the shipped mixture routes the held-out points."""

    points: np.ndarray  # (n, 2)
    chosen: np.ndarray  # (n,) expert per point
    regions: np.ndarray  # (n,) quadrant per point
    load: np.ndarray  # (E,) share of points per expert
    by_region: np.ndarray  # (4, E) share of each quadrant's points sent to each expert


def routing(model: MixtureOfExperts, config: MoEConfig) -> Routing:
    """Route the held-out set and count where each quadrant's points go."""
    x, _ = make_data(config.held_out, HELD_OUT_SEED)
    with torch.no_grad():
        chosen = model.route(x).chosen.numpy()
    regions = region(x).numpy()
    experts = len(model.experts)
    counts = np.zeros((4, experts))
    np.add.at(counts, (regions, chosen), 1)
    load = np.bincount(chosen, minlength=experts) / len(chosen)
    return Routing(x.numpy(), chosen, regions, load, counts / counts.sum(1, keepdims=True))


def score_rows(summary: dict) -> list[dict]:
    """runs.json as a table: each model's weights, compute per input and held-out error, then the baseline."""
    config = MoEConfig(**summary["config"])
    active = {MODELS[0]: 1, MODELS[1]: 1, MODELS[2]: config.experts}
    rows = [
        {
            "model": name,
            "weights": m["weights"],
            "FFN widths run per input": f"{active[name] * config.hidden}",
            "held-out MSE": m["held_out_mse"],
        }
        for name, m in summary["models"].items()
    ]
    baseline = {"model": "predict the mean (baseline)", "weights": 1, "FFN widths run per input": "0"}
    return rows + [{**baseline, "held-out MSE": summary["predict_the_mean_mse"]}]
