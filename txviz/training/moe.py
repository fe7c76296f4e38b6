"""Train the mixture of experts and its two dense baselines on the four-region toy; write assets/moe/."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from txviz.block.moe import ASSETS_DIR, MODELS, MoEConfig, save, train


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped models (fixed seed, one thread); print held-out error against the baseline."""
    parser = argparse.ArgumentParser(prog="python -m txviz train moe", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_DIR, help="output folder")
    parser.add_argument("--seed", type=int, default=MoEConfig.seed)
    parser.add_argument("--steps", type=int, default=MoEConfig.steps)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # a tiny model: one thread keeps runs identical and leaves the other core free
    config = MoEConfig(seed=args.seed, steps=args.steps)
    models, metrics = {}, {}
    for name in MODELS:
        models[name], metrics[name] = train(name, config)
        m = metrics[name]
        print(f"{name}: {m['weights']} weights, held-out MSE {m['held_out_mse']:.4f} in {m['seconds']} s")
    save(models, metrics, config, args.out)
    baseline = json.loads((args.out / "runs.json").read_text())["predict_the_mean_mse"]
    print(f"predict-the-mean baseline MSE: {baseline:.4f} (same held-out points)")
    print(f"wrote model_0..2.safetensors and runs.json to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
