"""Fine-tuning (UDL 12.11): the tiny BERT unfrozen, against the same heads on the frozen encoder.

Both runs start from the same pretrained tiny BERT (tiny-mlm) and the same two linear heads, one on
<cls> (is the sentence true or false) and one on every word (ok or wrong), trained together on the
same batches with the same optimiser and steps. The only difference: the frozen run updates the
heads alone; the fine-tuned run also updates every weight of the encoder. Both are scored on the
same held-out sentences as the shipped logistic probes (encoder_tasks.py), whose numbers are shown
beside them, with the majority and word-frequency baselines.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from txviz.core import paths
from txviz.core.running import run
from txviz.objectives import encoder_tasks as tasks
from txviz.objectives.masked import load_mlm

ASSETS_FILE = paths.ASSETS / "finetune" / "runs.json"
RUNS = ("frozen", "fine-tuned")


@dataclass(frozen=True)
class FinetuneConfig:
    """Everything that decides a run: the seed fixes the heads' initial weights and every batch."""

    steps: int = 600
    batch_size: int = 32
    head_lr: float = 1e-2  # the heads learn fast in both runs
    encoder_lr: float = 1e-3  # the pretrained weights move gently (fine-tuned run only)
    seed: int = 0


def _encode(loaded, examples: list[tasks.Example]):
    encoded = loaded.tokenizer([e.text for e in examples], padding=True, return_tensors="pt")
    # one token per word in this closed vocabulary: word i is token i + 1, after [CLS]
    tags = torch.full(encoded.input_ids.shape, -100)
    for i, e in enumerate(examples):
        tags[i, 1 : 1 + len(e.tags)] = torch.tensor(e.tags)
    return encoded, torch.tensor([e.label for e in examples]), tags


def _outputs(loaded, heads: nn.ModuleDict, encoded, grad: bool):
    """Sentence logits (B, 2) from <cls> and tag logits (B, T, 2) from every token of the last layer."""
    with torch.set_grad_enabled(grad):
        result = run(
            loaded.model,
            outputs=("hidden_states",),
            grad=True,
            input_ids=encoded.input_ids,
            attention_mask=encoded.attention_mask,
        )
        last = result.hidden_states[-1]
        return heads["sentence"](last[:, 0]), heads["tag"](last)


def evaluate(loaded, heads: nn.ModuleDict, examples: list[tasks.Example]) -> dict:
    """Held-out sentence accuracy and the tagger's word accuracy and exact false sentences."""
    encoded, labels, _ = _encode(loaded, examples)
    sentence, tag = _outputs(loaded, heads, encoded, grad=False)
    predicted = [tag[i, 1 : 1 + len(e.tags)].argmax(-1).numpy() for i, e in enumerate(examples)]
    return {
        "sentence_accuracy": float((sentence.argmax(-1) == labels).float().mean()),
        "tagger": tasks.tag_scores(predicted, examples),
    }


def train(frozen: bool, config: FinetuneConfig = FinetuneConfig()) -> tuple[dict, dict]:
    """Train the two heads (and, unless frozen, the encoder) on the training sentences: (weights, numbers)."""
    train_examples, heldout = tasks.train_and_heldout(tasks.SEED)
    loaded = load_mlm()  # a fresh copy: fine-tuning changes its weights
    for p in loaded.model.parameters():
        p.requires_grad_(not frozen)
    torch.manual_seed(config.seed)
    d = loaded.model.config.hidden_size
    heads = nn.ModuleDict({"sentence": nn.Linear(d, 2), "tag": nn.Linear(d, 2)})
    groups = [{"params": list(heads.parameters()), "lr": config.head_lr}]
    if not frozen:
        groups.append({"params": list(loaded.model.base_model.parameters()), "lr": config.encoder_lr})
    trained = [p for g in groups for p in g["params"]]
    optimiser = torch.optim.Adam(groups)
    generator = torch.Generator().manual_seed(config.seed)
    curve, start = [], time.perf_counter()
    for _ in range(config.steps):
        picked = torch.randint(len(train_examples), (config.batch_size,), generator=generator).tolist()
        encoded, labels, tags = _encode(loaded, [train_examples[i] for i in picked])
        sentence, tag = _outputs(loaded, heads, encoded, grad=True)
        loss = nn.functional.cross_entropy(sentence, labels) + nn.functional.cross_entropy(
            tag.transpose(1, 2), tags, ignore_index=-100
        )
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        curve.append(round(float(loss.detach()), 4))
    seconds = time.perf_counter() - start
    weights = {f"heads.{k}": v for k, v in heads.state_dict().items()}
    if not frozen:  # the frozen run's encoder is tiny-mlm's own
        # keys under the base model's prefix ("bert." for tiny-mlm), as the shipped runs store them
        prefix = loaded.model.base_model_prefix
        weights |= {f"{prefix}.{k}": v for k, v in loaded.model.base_model.state_dict().items()}
    return weights, {
        "heldout": evaluate(loaded, heads, heldout),
        "train": evaluate(loaded, heads, train_examples[:600]),
        "trained_weights": sum(p.numel() for p in trained),
        "curve": curve,
        "seconds": round(seconds, 1),
    }


def measure(config: FinetuneConfig = FinetuneConfig()) -> tuple[dict, dict]:
    """Both runs, and the baselines, on the same held-out sentences: (weights per run, numbers)."""
    train_examples, heldout = tasks.train_and_heldout(tasks.SEED)
    baseline = tasks.word_tag_baseline(train_examples)
    trained = {name: train(name == "frozen", config) for name in RUNS}
    return {name: weights for name, (weights, _) in trained.items()}, {
        "config": asdict(config),
        "heldout_sentences": len(heldout),
        "majority_accuracy": tasks.majority_accuracy(train_examples, heldout),
        "word_tag_baseline": tasks.tag_scores(
            [np.array([baseline.get(w, 0) for w in e.words]) for e in heldout], heldout
        ),
        **{name: numbers for name, (_, numbers) in trained.items()},
    }


def load(path=ASSETS_FILE) -> dict:
    return json.loads(path.read_text())


def weights_file(name: str, path=ASSETS_FILE):
    return path.parent / f"{name}.safetensors"


def save(weights: dict, runs: dict, path=ASSETS_FILE) -> None:
    """runs.json and, per run, its trained weights (the heads; the fine-tuned encoder too)."""
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(runs) + "\n")
    for name, tensors in weights.items():
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(weights_file(name, path)))


def load_run(name: str, path=ASSETS_FILE):
    """The tiny BERT and the two heads of one shipped run, ready for `evaluate`."""
    from safetensors.torch import load_file

    tensors = load_file(str(weights_file(name, path)))
    loaded = load_mlm()
    prefix = f"{loaded.model.base_model_prefix}."
    bert = {k.removeprefix(prefix): v for k, v in tensors.items() if k.startswith(prefix)}
    if bert:
        loaded.model.base_model.load_state_dict(bert)
    d = loaded.model.config.hidden_size
    heads = nn.ModuleDict({"sentence": nn.Linear(d, 2), "tag": nn.Linear(d, 2)})
    heads.load_state_dict({k.removeprefix("heads."): v for k, v in tensors.items() if k.startswith("heads.")})
    return loaded, heads


def score_rows(runs: dict, probes: dict) -> list[dict]:
    """One row per reader of the held-out sentences: baselines, the shipped probes, frozen and fine-tuned heads."""

    def row(name: str, sentence: float | None, tagger: dict, weights: str) -> dict:
        return {
            "reader": name,
            "sentence true/false": None if sentence is None else round(sentence, 3),
            "tags: word accuracy": round(tagger["word_accuracy"], 3),
            "tags: false sentences exact": round(tagger["false_sentences_exact"], 3),
            "weights trained": weights,
        }

    return [
        row(
            "baseline: majority label / each word's most frequent tag",
            runs["majority_accuracy"],
            runs["word_tag_baseline"],
            "none",
        ),
        row(
            "frozen encoder: logistic probes (shipped, regularisation by CV)",
            probes["sentence_accuracy"],
            probes["tagger"],
            "the probes",
        ),
        *(
            row(
                f"{name} encoder: linear heads, {runs['config']['steps']} Adam steps",
                runs[name]["heldout"]["sentence_accuracy"],
                runs[name]["heldout"]["tagger"],
                f"{runs[name]['trained_weights']:,}",
            )
            for name in RUNS
        ),
    ]
