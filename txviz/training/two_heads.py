"""Train the one-head and two-head models of the several-heads toy; write assets/two_heads/."""

from __future__ import annotations

import argparse
from pathlib import Path

from txviz.selfattention.twoheads import ASSETS_DIR, HEADS, TwoHeadsConfig, save, train


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped models (fixed seed, one thread); print held-out accuracy against chance."""
    parser = argparse.ArgumentParser(prog="python -m txviz train two_heads", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_DIR, help="output folder")
    parser.add_argument("--seed", type=int, default=TwoHeadsConfig.seed)
    parser.add_argument("--steps", type=int, default=TwoHeadsConfig.steps)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # a tiny model: one thread keeps runs identical and leaves the other core free
    config = TwoHeadsConfig(seed=args.seed, steps=args.steps)
    print(f"chance: {1 / config.symbols:.4f} per answer, {1 / config.symbols**2:.4f} for both")
    models, metrics = {}, {}
    for heads in HEADS:
        models[heads], metrics[heads] = train(heads, config)
        m = metrics[heads]
        print(
            f"{heads} head{'s' * (heads > 1)}: held-out subject {m['subject']:.4f}, object {m['object']:.4f}, "
            f"both {m['both']:.4f} in {m['seconds']} s"
        )
    save(models, metrics, config, args.out)
    print(f"wrote heads_1.safetensors, heads_2.safetensors and runs.json to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
