"""Why a decoder needs its mask: the same tiny decoder trained with and without the causal mask.

Both read "3 1 4 = three one and four <end>" and learn to predict each next token. Without the
mask, position t also reads position t + 1, which is the token it must predict: the training
loss falls to near zero, below the floor an honest model cannot pass (the digits are random, so
each costs ln 9 nats to a model that has not seen it). Generating, the next token is not there to
read, and the unmasked decoder's words are wrong. Same data, same seed, same weights at the
start: the mask is the only difference.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_model, save_model
from torch import nn

from txviz.core import paths
from txviz.seq2seq import numbers as nb

ASSETS_DIR = paths.ASSETS / "peeking"
MASKS = ("causal", "none")
WINDOW = 24  # tokens per training row: examples packed one after another, as language models train


@dataclass(frozen=True)
class PeekConfig:
    """Everything that decides a run: the seed fixes the initial weights and every batch."""

    d_model: int = 32
    layers: int = 2
    heads: int = 2
    steps: int = 600
    batch_size: int = 64
    lr: float = 3e-3
    held_out: int = 500
    seed: int = 0


def sequence(digits: tuple[str, ...]) -> list[int]:
    """ "3 1 4" -> the ids of "3 1 4 = three one and four <end>"."""
    return nb.ids((*digits, "=", *nb.english(digits))) + [nb.END]


class TinyDecoder(nn.Module):
    """A decoder-only transformer; `causal` says whether position t may read positions after it."""

    def __init__(self, config: PeekConfig = PeekConfig()):
        super().__init__()
        self.embed = nb.Embed(config.d_model, WINDOW)
        self.blocks = nb.stack(config.d_model, config.layers, config.heads)
        self.out = nn.Linear(config.d_model, len(nb.WORDS))

    def forward(self, token_ids: torch.Tensor, causal: bool) -> torch.Tensor:
        n = token_ids.shape[1]
        mask = nb.causal_mask(n) if causal else None
        return self.out(self.blocks(self.embed(token_ids), mask=mask))


def packed(sources: list[tuple[str, ...]], rows: int, generator: torch.Generator) -> list[list[int]]:
    """Rows of WINDOW + 1 tokens: random examples one after another, each row starting at an example."""
    out = []
    for _ in range(rows):
        row: list[int] = []
        while len(row) <= WINDOW:
            row += sequence(sources[int(torch.randint(len(sources), (1,), generator=generator))])
        out.append(row[: WINDOW + 1])
    return out


def batch(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (every token but the last) and targets (every token but the first)."""
    tokens = torch.tensor(rows)
    return tokens[:, :-1], tokens[:, 1:]


def losses(model: TinyDecoder, causal: bool, sources: list, rows: int = 400) -> dict[str, float]:
    """Mean next-token loss in nats over every token, the digits only and the answer (words and <end>)."""
    inputs, targets = batch(packed(sources, rows, torch.Generator().manual_seed(nb.HELD_OUT_SEED)))
    with torch.no_grad():
        each = nn.functional.cross_entropy(model(inputs, causal).transpose(1, 2), targets, reduction="none")
    digit = (targets >= nb.INDEX["1"]) & (targets <= nb.INDEX["9"])
    answer = (targets > nb.INDEX["9"]) | (targets == nb.END) | (targets == nb.INDEX["and"])
    return {
        "all": float(each.mean()),
        "digits": float(each[digit].mean()),
        "answer": float(each[answer].mean()),
    }


def generate(model: TinyDecoder, causal: bool, sources: list) -> list[str]:
    """Greedy answers: feed "3 1 4 =", append the likeliest token, again, as long as the right answer."""
    # sources of one length run as one batch; each step reads the whole row so far, as generation does
    outputs: dict[int, str] = {}
    with torch.no_grad():
        for k in sorted({len(s) for s in sources}):
            rows = [i for i, s in enumerate(sources) if len(s) == k]
            tokens = torch.tensor([nb.ids((*sources[i], "=")) for i in rows])
            while tokens.shape[1] < 2 * k + 3:  # k digits, "=", k + 1 words and <end>
                logits = model(tokens, causal)[:, -1]
                logits[:, [nb.PAD, nb.START]] = float("-inf")
                tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], 1)
            for i, row in zip(rows, tokens[:, k + 1 :].tolist(), strict=True):
                outputs[i] = nb.text(row)
    return [outputs[i] for i in range(len(sources))]


def exact(outputs: list[str], sources: list) -> float:
    """Share of generated answers equal to the right English words."""
    return float(np.mean([o == " ".join(nb.english(s)) for o, s in zip(outputs, sources, strict=True)]))


def digit_share(held_out: int = PeekConfig.held_out, rows: int = 400) -> float:
    """The share of next tokens that are digits in the held-out packed rows that `losses` scores."""
    sources = nb.split(held_out)[1]
    targets = batch(packed(sources, rows, torch.Generator().manual_seed(nb.HELD_OUT_SEED)))[1]
    return float(((targets >= nb.INDEX["1"]) & (targets <= nb.INDEX["9"])).float().mean())


def digit_floor() -> float:
    """The loss no model can beat on the digits: a digit not yet seen is one of 9, so ln 9 nats."""
    return math.log(9)


def train(causal: bool, config: PeekConfig = PeekConfig()) -> tuple[TinyDecoder, dict]:
    """Adam on fresh batches of training digit strings; the losses along the way and held-out scores after."""
    train_sources, held_out = nb.split(config.held_out)
    torch.manual_seed(config.seed)
    model = TinyDecoder(config)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    curve, start = [], time.perf_counter()
    for _ in range(config.steps):
        inputs, targets = batch(packed(train_sources, config.batch_size, generator))
        loss = nn.functional.cross_entropy(model(inputs, causal).transpose(1, 2), targets)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        curve.append(round(float(loss.detach()), 4))
    seconds = time.perf_counter() - start
    model.eval()
    sample = train_sources[:500]
    return model, {
        "train_loss": losses(model, causal, sample),
        "heldout_loss": losses(model, causal, held_out),
        "train_generation_exact": exact(generate(model, causal, sample[:200]), sample[:200]),
        "heldout_generation_exact": exact(generate(model, causal, held_out), held_out),
        "curve": curve,
        "seconds": round(seconds, 1),
    }


def save(models: dict, metrics: dict, config: PeekConfig, directory: Path = ASSETS_DIR) -> None:
    """Write causal.safetensors, none.safetensors and runs.json (the config and every number)."""
    directory.mkdir(parents=True, exist_ok=True)
    for mask, model in models.items():
        save_model(model, str(directory / f"{mask}.safetensors"))
    runs = {"config": asdict(config), "digit_floor": digit_floor(), **metrics}
    (directory / "runs.json").write_text(json.dumps(runs, indent=1) + "\n")


def load(directory: Path = ASSETS_DIR) -> tuple[dict, dict]:
    """The shipped decoders, keyed by mask, and runs.json."""
    runs = json.loads((directory / "runs.json").read_text())
    config = PeekConfig(**runs["config"])
    models = {}
    for mask in MASKS:
        models[mask] = TinyDecoder(config)
        load_model(models[mask], str(directory / f"{mask}.safetensors"))
        models[mask].eval()
    return models, runs


def examples(models: dict, digits: tuple[str, ...]) -> list[dict]:
    """One digit string answered by both decoders, beside the right answer."""
    right = " ".join(nb.english(digits))
    rows = []
    for mask in MASKS:
        said = generate(models[mask], mask == "causal", [digits])[0]
        rows.append({"mask": mask, "generated": said, "right": said == right})
    return rows


def score_rows(runs: dict) -> list[dict]:
    """The table of both runs: losses (nats per token) and exact answers when generating."""
    return [
        {
            "decoder": "causal mask" if mask == "causal" else "no mask",
            "training loss, all tokens": round(runs[mask]["train_loss"]["all"], 3),
            "training loss, digits": round(runs[mask]["train_loss"]["digits"], 3),
            "training loss, answer": round(runs[mask]["train_loss"]["answer"], 3),
            "held-out generation exact": round(runs[mask]["heldout_generation_exact"], 3),
        }
        for mask in MASKS
    ]
