"""Train the same tiny decoder with and without its causal mask; write assets/peeking/."""

from __future__ import annotations

import argparse
from pathlib import Path

from txviz.masks.peeking import ASSETS_DIR, MASKS, PeekConfig, digit_floor, save, train


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped decoders (fixed seed, one thread); print losses and held-out generation."""
    parser = argparse.ArgumentParser(prog="python -m txviz train peeking", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_DIR, help="output folder")
    parser.add_argument("--seed", type=int, default=PeekConfig.seed)
    parser.add_argument("--steps", type=int, default=PeekConfig.steps)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # a tiny model: one thread keeps runs identical and leaves the other core free
    config = PeekConfig(seed=args.seed, steps=args.steps)
    print(f"floor on the digits for a model that cannot see them: ln 9 = {digit_floor():.4f} nats")
    models, metrics = {}, {}
    for mask in MASKS:
        models[mask], metrics[mask] = train(mask == "causal", config)
        m = metrics[mask]
        print(
            f"mask {mask}: training loss {m['train_loss']['all']:.4f} (digits {m['train_loss']['digits']:.4f}, "
            f"answer {m['train_loss']['answer']:.4f}); held-out generation exact "
            f"{m['heldout_generation_exact']:.4f} in {m['seconds']} s"
        )
    save(models, metrics, config, args.out)
    print(f"wrote causal.safetensors, none.safetensors and runs.json to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
