"""Train decomposable attention for a 0-5 relatedness score on generated pairs; write assets/relatedness/."""

from __future__ import annotations

import argparse
from pathlib import Path

from txviz.entailment.relatedness import ASSETS_DIR, RelatednessConfig, save, train


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped model (fixed seed, one thread); print held-out errors against the baselines."""
    parser = argparse.ArgumentParser(prog="python -m txviz train relatedness", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_DIR, help="output folder")
    parser.add_argument("--seed", type=int, default=RelatednessConfig.seed)
    parser.add_argument("--steps", type=int, default=RelatednessConfig.steps)
    args = parser.parse_args(argv)
    import torch

    from txviz import models
    from txviz.entailment.vectors import WordVectors

    torch.set_num_threads(1)  # a tiny model: one thread keeps runs identical and leaves the other core free
    vectors = WordVectors.from_loaded(models.load("minilm", "cpu"))
    model, runs = train(RelatednessConfig(seed=args.seed, steps=args.steps), vectors)
    for name, e in runs["heldout"].items():
        print(f"{name}: held-out RMSE {e['rmse']:.4f}, MAE {e['mae']:.4f}, Pearson r {e['pearson']:.4f}")
    save(model, runs, args.out)
    print(f"trained in {runs['seconds']} s; wrote relatedness.safetensors and runs.json to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
