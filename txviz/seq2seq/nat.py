"""Non-autoregressive decoding done properly: a length predictor, and two right answers to choose from.

Three tiny encoder-decoders read digits aloud. The autoregressive one (AT)
writes one word per pass, each pass reading the words already written, until <end>. The
non-autoregressive ones (NAT, Gu et al. 2018) first predict the output's length from the encoder
(a classifier on its mean output), then fill every position in one pass: the decoder's inputs are
positions only, so no position knows what another one wrote. Trained on English and French
answers at once, every position's distribution is a mix of both languages and the length's a mix
of both lengths; picking each position's likeliest word independently gives answers such as
"trois one quatre four", which is neither. The AT decoder commits with its first word and every
later word follows it. A NAT trained on English alone, one answer per source, does fine: the gap is the multi-modality.
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
from txviz.seq2seq import numbers as nb

ASSETS_DIR = paths.ASSETS / "nat"
MAX_TARGET = nb.MAX_DIGITS + 1  # English words plus "and"
# name -> (decoding, answers trained on)
MODELS = {
    "at": ("autoregressive", "both"),
    "nat": ("non-autoregressive", "both"),
    "nat_english": ("non-autoregressive", "english"),
}
VERDICTS = ("English", "French", "neither")
LABELS = {
    "at": "autoregressive",
    "nat": "non-autoregressive",
    "nat_english": "non-autoregressive, English only",
}


@dataclass(frozen=True)
class NatConfig:
    """Everything that decides a run: the seed fixes the initial weights, every batch and each answer's language."""

    d_model: int = 32
    layers: int = 2
    heads: int = 2
    steps: int = 300
    batch_size: int = 64
    lr: float = 3e-3
    held_out: int = 500
    seed: int = 0


def answer(digits: tuple[str, ...], french: bool) -> tuple[str, ...]:
    return nb.french(digits) if french else nb.english(digits)


class Translator(nn.Module):
    """Encoder over the digits; a decoder that is causal over the words written (AT) or reads positions only (NAT)."""

    def __init__(self, autoregressive: bool, config: NatConfig = NatConfig()):
        super().__init__()
        d = config.d_model
        self.autoregressive = autoregressive
        self.source_embed = nb.Embed(d, nb.MAX_DIGITS)
        self.source_blocks = nb.stack(d, config.layers, config.heads)
        self.target_embed = nb.Embed(d, MAX_TARGET + 1)
        self.target_blocks = nb.stack(d, config.layers, config.heads, cross=True)
        self.out = nn.Linear(d, len(nb.WORDS))
        self.length = nn.Linear(d, MAX_TARGET + 1)  # NAT only: the number of words, from the encoder

    def encode(self, source: torch.Tensor) -> torch.Tensor:
        return self.source_blocks(self.source_embed(source))

    def length_logits(self, memory: torch.Tensor) -> torch.Tensor:
        return self.length(memory.mean(1))

    def words(self, memory: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Word logits (B, T, V): AT inputs are <start> and the words so far; NAT inputs are <pad> at each position."""
        mask = nb.causal_mask(inputs.shape[1]) if self.autoregressive else None
        return self.out(self.target_blocks(self.target_embed(inputs), memory, tgt_mask=mask))


def _sources(sources: list) -> torch.Tensor:
    """Digit ids padded to 4; the encoder reads the padding too (it marks where the digits stop)."""
    return nb.padded([nb.ids(s) for s in sources], nb.MAX_DIGITS)


def _batch(sources: list, french: list[bool], autoregressive: bool):
    """Source ids; decoder inputs and targets (AT: shifted with <end>; NAT: the words, padded); lengths."""
    source = _sources(sources)
    targets = [nb.ids(answer(s, f)) for s, f in zip(sources, french, strict=True)]
    lengths = torch.tensor([len(t) for t in targets])
    if autoregressive:
        inputs = nb.padded([[nb.START, *t] for t in targets], MAX_TARGET + 1)
        return source, inputs, nb.padded([[*t, nb.END] for t in targets], MAX_TARGET + 1), lengths
    inputs = torch.full((len(sources), MAX_TARGET), nb.PAD)
    return source, inputs, nb.padded(targets, MAX_TARGET), lengths


def train(name: str, config: NatConfig = NatConfig()) -> tuple[Translator, dict]:
    """Adam on fresh batches; each answer's language drawn by the seeded generator (English only for nat_english)."""
    decoding, answers = MODELS[name]
    autoregressive = decoding == "autoregressive"
    train_sources, held_out = nb.split(config.held_out)
    torch.manual_seed(config.seed)
    model = Translator(autoregressive, config)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    start = time.perf_counter()
    for _ in range(config.steps):
        picked = torch.randint(len(train_sources), (config.batch_size,), generator=generator).tolist()
        french = (torch.rand(config.batch_size, generator=generator) < 0.5).tolist()
        french = french if answers == "both" else [False] * config.batch_size
        source, inputs, targets, lengths = _batch([train_sources[i] for i in picked], french, autoregressive)
        memory = model.encode(source)
        loss = nn.functional.cross_entropy(
            model.words(memory, inputs).transpose(1, 2), targets, ignore_index=nb.PAD
        )
        if not autoregressive:
            loss = loss + nn.functional.cross_entropy(model.length_logits(memory), lengths)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    seconds = time.perf_counter() - start
    model.eval()
    outputs = decode(model, held_out)
    counts = {v: 0 for v in VERDICTS}
    for said, digits in zip(outputs.texts, held_out, strict=True):
        counts[verdict(said, digits)] += 1
    return model, {
        "decoding": decoding,
        "answers": answers,
        "heldout": {v: round(c / len(held_out), 4) for v, c in counts.items()},
        "decoder_passes": round(float(np.mean(outputs.passes)), 2),
        "final_loss": round(float(loss.detach()), 4),
        "seconds": round(seconds, 1),
    }


def verdict(said: str, digits: tuple[str, ...]) -> str:
    """English, French or neither."""
    if said == " ".join(nb.english(digits)):
        return "English"
    return "French" if said == " ".join(nb.french(digits)) else "neither"


@dataclass(frozen=True)
class Decoded:
    """Outputs of a batch, the decoder passes each took, and (NAT) each position's word probabilities."""

    texts: list[str]
    passes: list[int]
    length_probs: np.ndarray | None  # (B, MAX_TARGET + 1)
    word_probs: np.ndarray | None  # (B, MAX_TARGET, V)


@torch.no_grad()
def decode(model: Translator, sources: list) -> Decoded:
    """Greedy: AT word by word until <end>; NAT the likeliest length, then every position's likeliest word at once."""
    source = _sources(sources)
    memory = model.encode(source)
    banned = [nb.PAD, nb.START, *nb.ids(nb.DIGITS), nb.EQUALS]
    if model.autoregressive:
        tokens = torch.full((len(sources), 1), nb.START)
        for _ in range(MAX_TARGET + 1):
            logits = model.words(memory, tokens)[:, -1]
            logits[:, banned] = float("-inf")
            tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], 1)
        rows = tokens[:, 1:].tolist()
        passes = [(r.index(nb.END) + 1) if nb.END in r else len(r) for r in rows]
        return Decoded([nb.text(r) for r in rows], passes, None, None)
    length_logits = model.length_logits(memory)
    length_logits[:, 0] = float("-inf")
    logits = model.words(memory, torch.full((len(sources), MAX_TARGET), nb.PAD))
    logits[..., [*banned, nb.END]] = float("-inf")
    words = logits.argmax(-1).tolist()
    lengths = length_logits.argmax(-1).tolist()
    texts = [nb.text(w[:n]) for w, n in zip(words, lengths, strict=True)]
    return Decoded(
        texts,
        [1] * len(sources),
        torch.softmax(length_logits, -1).numpy(),
        torch.softmax(logits, -1).numpy(),
    )


def save(models: dict, metrics: dict, config: NatConfig, directory: Path = ASSETS_DIR) -> None:
    """Write NAME.safetensors for each model and runs.json (the config and held-out numbers)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, model in models.items():
        save_model(model, str(directory / f"{name}.safetensors"))
    (directory / "runs.json").write_text(json.dumps({"config": asdict(config), **metrics}, indent=1) + "\n")


def load(directory: Path = ASSETS_DIR) -> tuple[dict, dict]:
    """The shipped translators, keyed as MODELS, and runs.json."""
    runs = json.loads((directory / "runs.json").read_text())
    config = NatConfig(**runs["config"])
    models = {}
    for name, (decoding, _) in MODELS.items():
        models[name] = Translator(decoding == "autoregressive", config)
        load_model(models[name], str(directory / f"{name}.safetensors"))
        models[name].eval()
    return models, runs


def embedding_rows(model: Translator) -> list[dict]:
    """The reader's token tables: the encoder's and the decoder's are two matrices, and the output layer a
    third; the 2017 Transformer ties all three into one shared matrix (Vaswani et al. 2017, section 3.4)."""
    tables = {
        "source (encoder input)": model.source_embed.token.weight,
        "target (decoder input)": model.target_embed.token.weight,
        "output (pre-softmax)": model.out.weight,
    }
    shared = {name: [other for other, w in tables.items() if other != name and w.data_ptr() == t.data_ptr()]
              for name, t in tables.items()}  # fmt: skip
    return [
        {"table": name, "rows x columns": " x ".join(map(str, t.shape)), "weights": t.numel(),
         "shared with": ", ".join(shared[name]) or "none"}
        for name, t in tables.items()
    ]  # fmt: skip


def score_rows(runs: dict) -> list[dict]:
    """Held-out answers of each model: English, French or neither, and decoder passes per answer."""
    return [
        {
            "model": f"{runs[name]['decoding']}, trained on {'English and French' if answers == 'both' else 'English only'}",
            **{verdict_: runs[name]["heldout"][verdict_] for verdict_ in VERDICTS},
            "decoder passes": runs[name]["decoder_passes"],
        }
        for name, (_, answers) in MODELS.items()
    ]


def example(models: dict, digits: tuple[str, ...]) -> dict:
    """One source through the three models: outputs, verdicts, and the NAT's length and per-position choices."""
    outputs = {name: decode(model, [digits]) for name, model in models.items()}
    rows = [
        {
            "model": LABELS[name],
            "output": out.texts[0],
            "verdict": verdict(out.texts[0], digits),
            "passes": out.passes[0],
        }
        for name, out in outputs.items()
    ]
    nat = outputs["nat"]
    positions = []
    for t in range(int(nat.length_probs[0].argmax())):
        probs = nat.word_probs[0, t]
        first, second = np.argsort(probs)[::-1][:2]
        positions.append(
            {
                "position": t + 1,
                "likeliest": nb.WORDS[first],
                "p": round(float(probs[first]), 3),
                "runner-up": nb.WORDS[second],
                "p ": round(float(probs[second]), 3),
            }
        )
    lengths = {n: round(float(p), 3) for n, p in enumerate(nat.length_probs[0]) if p > 0.01}
    return {"rows": rows, "positions": positions, "lengths": lengths}


WHY_AT_WINS = (
    "Why NAT lags AT: a non-autoregressive decoder predicts every position from the source alone, so "
    "each position's distribution is the average over every right answer, and nothing ties position 2's "
    "choice to position 1's. When a source has one right answer this costs little (the English-only "
    "row); when it has several, position-wise choices mix them into an answer that is none of them. An "
    "autoregressive decoder conditions each word on the words already written: its first word picks a "
    "language and the rest follow. NAT buys one decoder pass instead of one per word, and pays in "
    "multi-modality. The remedies in the literature shrink the choice before decoding: train on one "
    "teacher's outputs (distillation picks one answer per source), give the decoder a latent plan "
    "(fertilities, Gu et al. 2018), or refine over a few passes (Mask-Predict)."
)
