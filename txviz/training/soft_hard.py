"""Train the soft and hard (REINFORCE) key-value readers and write them to assets/soft_hard/."""

from __future__ import annotations

import argparse
from pathlib import Path

from txviz.softhard.toy import ASSETS_DIR, METHODS, ToyConfig, save_runs, train


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped runs (fixed seed, one thread); print accuracies and times."""
    parser = argparse.ArgumentParser(prog="python -m txviz train soft_hard", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_DIR, help="output folder")
    parser.add_argument("--seed", type=int, default=ToyConfig.seed)
    parser.add_argument("--steps", type=int, default=ToyConfig.steps)
    args = parser.parse_args(argv)
    config = ToyConfig(seed=args.seed, steps=args.steps)
    runs = []
    for method in METHODS:
        run = train(method, config)
        print(f"{method:>9}: held-out accuracy {run.final_accuracy:.4f} in {run.seconds:.1f} s")
        runs.append(run)
    save_runs(runs, args.out)
    print(f"wrote {', '.join(f'{m}.safetensors' for m in METHODS)} and runs.json to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
