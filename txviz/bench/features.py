"""`python -m txviz bench features`: a TopK dictionary of SmolLM2's middle residual stream, measured by hand.

Trains txviz's TopK SAE (16 x d_model, k 32) on the stream entering the middle block over Python's
documentation, then prints the held-out fraction of variance explained, mean L0, dead latents and
the language-model loss clean, spliced and zero-ablated; forwards and training are timed apart, so
a larger token budget can be extrapolated. When a Python with sae-lens is given (--saelens-python,
kept out of the project's environment: it pulls transformer-lens), its TopK trainer is run on the
same saved activations with the same width, k, batches, learning rate and token budget, and measured
by the same code. The last line is `loss recovered = X.XX of the gap (SAELens Y.YY)`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from txviz import models
from txviz.atlas.corpus import named_or_file
from txviz.core.capture import PLAIN
from txviz.core.running import run
from txviz.features import quality
from txviz.features.activations import Place, at_place, check_place, collect
from txviz.features.build import split
from txviz.features.sae import Settings, start_state, train

DEFAULT_SAELENS = "/tmp/saevenv/bin/python"

# Runs in the sae-lens venv, where txviz is not installed: written to a temporary file per run.
SAELENS_SCRIPT = """
import itertools, sys, time
import numpy as np, torch
from sae_lens import TopKTrainingSAE, TopKTrainingSAEConfig
from sae_lens.config import SAETrainerConfig
from sae_lens.training.sae_trainer import SAETrainer

src, out = sys.argv[1], sys.argv[2]
width, k, tokens, batch, seed = (int(a) for a in sys.argv[3:7] + sys.argv[8:9])
lr = float(sys.argv[7])
torch.manual_seed(seed)
data = np.load(src)
train, held, splice = (torch.from_numpy(data[n]) for n in ("train", "held", "splice"))
cfg = TopKTrainingSAEConfig(d_in=train.shape[1], d_sae=width, k=k, dtype="float32", device="cpu",
                            normalize_activations="expected_average_only_in")
sae = TopKTrainingSAE(cfg)
gen = torch.Generator().manual_seed(seed)
per_epoch = len(train) // batch

def batches():
    for _ in itertools.count():
        order = torch.randperm(len(train), generator=gen)
        for i in range(per_epoch):
            yield train[order[i * batch:(i + 1) * batch]]

steps = tokens // batch
trainer_cfg = SAETrainerConfig(total_training_samples=steps * batch, train_batch_size_samples=batch, lr=lr, lr_end=lr,
                               n_batches_for_norm_estimate=min(per_epoch, 20), device="cpu")
began = time.perf_counter()
sae = SAETrainer(trainer_cfg, sae, batches()).fit()
seconds = time.perf_counter() - began
with torch.no_grad():
    z = sae.encode(held)
    held_hat = sae.decode(z)
    splice_hat = sae.decode(sae.encode(splice))
np.savez(out, held_hat=held_hat.numpy(), splice_hat=splice_hat.numpy(), l0=(z > 0).sum(1).numpy(),
         active=(z > 0).any(0).numpy(), seconds=np.array(seconds))
"""


def _to_the_place_or_through(loaded, place: Place, ids: torch.Tensor) -> tuple[float, float]:
    """Median seconds of the same windows through every block (logits of one row) and to the place only."""
    whole, part = [], []
    for attempt in range(4):  # the first pair warms both up and is not counted
        began = time.perf_counter()
        for i in range(0, len(ids), 8):
            run(loaded.model, PLAIN, ("last_logits",), input_ids=ids[i : i + 8])
        middle = time.perf_counter()
        for i in range(0, len(ids), 8):
            at_place(loaded, place, ids[i : i + 8])
        if attempt:
            whole.append(middle - began)
            part.append(time.perf_counter() - middle)
    return float(np.median(whole)), float(np.median(part))


class Replay:
    """A reconstruction function that hands back precomputed rows in call order, checking the inputs match."""

    def __init__(self, inputs: np.ndarray, outputs: np.ndarray) -> None:
        self.inputs, self.outputs, self.at = inputs, outputs, 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        expected = torch.from_numpy(self.inputs[self.at : self.at + n])
        if expected.shape != x.shape or not torch.allclose(expected, x, atol=1e-4):
            raise RuntimeError("the splice activations differ from the ones sae-lens reconstructed")
        found = torch.from_numpy(self.outputs[self.at : self.at + n])
        self.at += n
        return found


def saelens(
    python: str, arrays: dict[str, np.ndarray], settings: Settings, width: int
) -> tuple[dict | None, str]:
    """sae-lens's TopK dictionary trained and applied in its own venv: its arrays, or None and why not."""
    if not Path(python).exists():
        return None, f"no Python with sae-lens at {python} (pass --saelens-python)"
    with tempfile.TemporaryDirectory(prefix="txviz-saelens-") as folder:
        src, out, script = Path(folder, "in.npz"), Path(folder, "out.npz"), Path(folder, "train.py")
        np.savez(src, **arrays)
        script.write_text(SAELENS_SCRIPT)
        args = [width, settings.k, settings.tokens, settings.batch, settings.lr, settings.seed]
        done = subprocess.run(
            [python, str(script), str(src), str(out), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            return None, f"sae-lens failed: {last}"
        with np.load(out) as data:
            return {n: data[n] for n in data.files}, ""


def main(argv: list[str] | None = None) -> int:
    """Train, measure and compare; prints one line per figure and the summary last."""
    parser = argparse.ArgumentParser(prog="python -m txviz bench features", description=__doc__)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--corpus", default="python-docs")
    parser.add_argument(
        "--layer", type=int, default=None, help="block whose input stream is read (default: middle)"
    )
    parser.add_argument("--place", choices=["resid_pre", "head_out"], default="resid_pre")
    parser.add_argument(
        "--tokens",
        type=int,
        default=65_536,
        help="training tokens (the corpus is passed over again past its size)",
    )
    parser.add_argument("--k", type=int, default=Settings.k)
    parser.add_argument("--expansion", type=int, default=Settings.expansion)
    parser.add_argument("--lr", type=float, default=Settings.lr)
    parser.add_argument("--held-out", type=int, default=Settings.held_out)
    parser.add_argument("--loss-windows", type=int, default=8, help="windows of the spliced-loss measure")
    parser.add_argument("--saelens-python", default=DEFAULT_SAELENS)
    args = parser.parse_args(argv)

    loaded = models.load(args.model)
    place = Place(args.place, loaded.n_layers // 2 if args.layer is None else args.layer)
    d = check_place(loaded, place)
    settings = Settings(
        expansion=args.expansion, k=args.k, tokens=args.tokens, lr=args.lr, held_out=args.held_out
    )
    cut = split(loaded, named_or_file(args.corpus), settings)
    loss_ids = cut.held[: args.loss_windows]
    print(
        f"{loaded.name}, {place.name}: width {d} x {settings.expansion} = {d * settings.expansion:,}, k {settings.k}"
    )

    began = time.perf_counter()
    data = collect(loaded, place, cut.train)[: settings.tokens]
    forward_s = time.perf_counter() - began
    held = collect(loaded, place, cut.held)[: settings.held_out]
    print(
        f"forwards to {place.name} (the blocks after it never run): {len(data):,} tokens in {forward_s:.1f} s, "
        f"{len(data) / forward_s:,.0f} tokens/s"
    )
    ids = torch.from_numpy(cut.train[:16])
    whole_s, part_s = _to_the_place_or_through(loaded, place, ids)
    print(
        f"same {ids.numel():,} tokens, medians of 3 after a warm-up: to the place {part_s:.2f} s, whole model "
        f"{whole_s:.2f} s (ratio {part_s / whole_s:.2f}x)"
    )
    began = time.perf_counter()
    state = train(data, settings, start_state(data, settings))
    train_s = time.perf_counter() - began
    trained = state.step * settings.batch  # past the corpus's size the same tokens are seen again
    read_rate, train_rate = len(data) / forward_s, trained / train_s
    print(
        f"training: {state.step:,} steps of {settings.batch} ({trained:,} tokens) in {train_s:.1f} s, "
        f"{train_rate:,.0f} tokens/s"
    )
    total = forward_s + train_s
    print(
        f"this budget: {len(data):,} tokens read in {forward_s / 60:.1f} min + {trained:,} trained in "
        f"{train_s / 60:.1f} min = {total / 60:.1f} min (forwards {forward_s / total:.0%}, training "
        f"{train_s / total:.0%}); 1M fresh tokens at these rates: {(1e6 / read_rate + 1e6 / train_rate) / 60:.1f} min"
    )

    ours = quality.reconstruction(state.sae, held)
    losses = quality.losses(loaded, place, loss_ids, state.sae)
    print(
        f"txviz   FVE {ours.fve:.3f}  L0 {ours.l0:.1f}  dead {ours.dead:,} of {ours.width:,} "
        f"(held-out {ours.tokens:,} tokens)"
    )
    print(
        f"loss (nats/token over {losses.tokens:,} predictions): clean {losses.clean:.3f}  "
        f"zero {losses.zero:.3f}  spliced {losses.spliced:.3f}"
    )

    splice = torch.cat(
        [
            at_place(loaded, place, torch.from_numpy(loss_ids[i : i + 4])).reshape(-1, d)
            for i in range(0, len(loss_ids), 4)
        ]
    ).numpy()
    theirs, why = saelens(
        args.saelens_python, {"train": data, "held": held, "splice": splice}, settings, d * settings.expansion
    )
    if theirs is None:
        print(f"loss recovered = {losses.recovered:.2f} of the gap (SAELens n/a ({why}))")
        return 0
    other = quality.measured(held, theirs["held_hat"], theirs["l0"], theirs["active"])
    other_losses = quality.losses(loaded, place, loss_ids, Replay(splice, theirs["splice_hat"]))
    print(
        f"SAELens FVE {other.fve:.3f}  L0 {other.l0:.1f}  dead {other.dead:,} of {other.width:,}; "
        f"spliced {other_losses.spliced:.3f}; trained in {float(theirs['seconds']):.1f} s"
    )
    print(f"loss recovered = {losses.recovered:.2f} of the gap (SAELens {other_losses.recovered:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
