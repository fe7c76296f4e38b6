"""Train `digits-captioner`: one captioner with soft attention (backprop), one with hard (REINFORCE)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

SEED = 0


def targets_of(captions: np.ndarray):
    """(B, 4) digits padded with -1 -> (B, 5) words, END after the last, -1 (ignored) after that."""
    import torch

    from txviz.captioning.canvas import END, MAX_STEPS

    out = torch.full((len(captions), MAX_STEPS), -1, dtype=torch.long)
    out[:, : captions.shape[1]] = torch.as_tensor(captions)
    lengths = (captions >= 0).sum(1)
    out[torch.arange(len(captions)), torch.as_tensor(lengths)] = END
    return out


def loss_of(model, pixels, targets, generator, entropy_bonus: float):
    """Soft: cross-entropy. Hard: cross-entropy of the words read + REINFORCE for the patches chosen."""
    import torch
    import torch.nn.functional as F

    from txviz.captioning.model import teacher_forced

    logits, probs, log_probs = teacher_forced(model, pixels, targets, generator)
    mask = (targets >= 0).float()
    ce = F.cross_entropy(logits.transpose(1, 2), targets.clamp_min(0), reduction="none") * mask
    loss = ce.sum() / mask.sum()
    if model.config.attention == "hard":
        # The reward of a patch is the loss of the word read from it (as in the soft-vs-hard toy);
        # a per-step batch-mean baseline and a unit scale lower the variance.
        reward = ce.detach()
        baseline = (reward * mask).sum(0) / mask.sum(0).clamp_min(1)
        advantage = (reward - baseline) * mask
        advantage = advantage / (advantage.pow(2).sum() / mask.sum()).sqrt().clamp_min(1e-6)
        entropy = -(probs * torch.log(probs.clamp_min(1e-12))).sum(-1)
        loss = (
            loss
            + (advantage * log_probs).sum() / mask.sum()
            - entropy_bonus * (entropy * mask).sum() / mask.sum()
        )
    return loss, float(ce.detach().sum() / mask.sum())


def train_one(
    method: str,
    x_train,
    y_train,
    steps: int,
    batch: int,
    seed: int,
    entropy_bonus: float = 0.01,
    encoder_from=None,
):
    """One captioner trained on fresh canvases of training digits every step; returns it and its curve."""
    import torch

    from txviz.captioning.canvas import make_canvases
    from txviz.captioning.model import Captioner, CaptionerConfig

    torch.manual_seed(seed)
    model = Captioner(CaptionerConfig(attention=method))
    if encoder_from is not None:
        model.borrow_encoder(encoder_from)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=3e-3, total_steps=max(steps, 1), pct_start=0.1
    )
    generator = torch.Generator().manual_seed(seed)
    curve, window = [], []
    model.train()
    for step in range(steps):
        canvases = make_canvases(x_train, y_train, batch, seed=seed * 1_000_003 + step)
        pixels = torch.as_tensor(canvases.pixels)
        loss, ce = loss_of(model, pixels, targets_of(canvases.captions), generator, entropy_bonus)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        scheduler.step()
        window.append(ce)
        if len(window) == 50 or step == steps - 1:
            curve.append({"step": step + 1, "word_loss": round(float(np.mean(window)), 4)})
            print(f"{method} step {step + 1:5d}  word loss {curve[-1]['word_loss']:.3f}", flush=True)
            window = []
    return model.eval(), curve


def train(steps: int, batch: int, seed: int, heldout: int, output: Path) -> dict:
    """Train both captioners, score them on fixed held-out canvases, save weights + txviz.json."""
    import torch

    from txviz.captioning import store
    from txviz.captioning.canvas import MAX_DIGITS, MIN_DIGITS
    from txviz.captioning.evaluate import HELDOUT_SEED, evaluate, held_out_canvases
    from txviz.imagegpt.data import split

    torch.set_num_threads(1)  # on a busy machine a second thread mostly spins waiting
    x_train, _, y_train, _ = split()
    test = held_out_canvases(heldout)[2]
    models, meta = {}, {"runs": {}}
    for method in ("soft", "hard"):
        start, start_cpu = time.perf_counter(), time.process_time()
        # Hard attention from scratch stayed at chance in 3,000 steps (the policy gets no signal until the
        # encoder is useful, and the encoder no signal until the policy finds the digits); like Xu et al.,
        # who read a pretrained CNN, it reads a trained encoder, the soft captioner's, kept fixed.
        encoder = models["soft"] if method == "hard" else None
        model, curve = train_one(method, x_train, y_train, steps, batch, seed, encoder_from=encoder)
        scores = evaluate(model, test, seed=seed)
        if method == "hard":
            scores["argmax_locations"] = evaluate(model, test, seed=seed, sample_locations=False)
        models[method] = model
        meta["runs"][method] = {
            **scores,
            "train_curve": curve,
            "train_seconds": round(time.perf_counter() - start, 1),  # wall clock, on a shared machine
            "train_cpu_seconds": round(time.process_time() - start_cpu, 1),
        }
        print(f"{method}: {scores}", flush=True)
    meta = {
        "kind": "captioner",
        "description": (
            "Two captioners (CNN over 4 x 4 patches, LSTM decoder attending to the 8 x 8 patch grid; Xu et al. 2015) "
            "trained by `python -m txviz train captioner` on 32 x 32 canvases of 2-4 scikit-learn digits. "
            "Soft is trained end to end by backprop; hard reads the soft one's encoder, kept fixed, and learns "
            "its attention by REINFORCE and its decoder by backprop."
        ),
        "hard_encoder": "the soft captioner's encoder, frozen (hard attention from scratch stayed at chance)",
        "configs": {m: models[m].config.to_dict() for m in models},
        "digits_per_canvas": [MIN_DIGITS, MAX_DIGITS],
        "heldout": {"canvases": heldout, "seed": HELDOUT_SEED, "digits": "the digits-vit held-out split"},
        "seed": seed,
        "steps": steps,
        "batch_size": batch,
        **meta,
    }
    store.save(models, meta, output)
    return meta


def main(argv: list[str] | None = None) -> int:
    """Command line: `python -m txviz train captioner [--steps N] [--batch N] [--heldout N] [--out DIR]`."""
    from txviz.captioning import store
    from txviz.captioning.evaluate import HELDOUT_CANVASES

    parser = argparse.ArgumentParser(prog="txviz train captioner", description=__doc__)
    parser.add_argument("--steps", type=int, default=3000, help="training steps for each captioner")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--heldout", type=int, default=HELDOUT_CANVASES, help="held-out canvases to score")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=store.FOLDER, help="output folder")
    args = parser.parse_args(argv)
    meta = train(args.steps, args.batch, args.seed, args.heldout, args.out)
    for method, run in meta["runs"].items():
        print(
            f"{method}: exact captions {run['exact_caption_accuracy']:.1%}, words {run['word_accuracy']:.1%}, "
            f"localisation {run['localisation']:.1%} on {run['canvases']} held-out canvases; {run['train_seconds']} s"
        )
    print(f"saved to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
