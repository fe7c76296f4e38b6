"""Train the autoregressive and non-autoregressive digit readers (one or two right answers); write assets/nat/."""

from __future__ import annotations

import argparse
from pathlib import Path

from txviz.seq2seq.nat import ASSETS_DIR, MODELS, NatConfig, save, train


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped translators (fixed seed, one thread); print held-out English/French/neither."""
    parser = argparse.ArgumentParser(prog="python -m txviz train nat", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_DIR, help="output folder")
    parser.add_argument("--seed", type=int, default=NatConfig.seed)
    parser.add_argument("--steps", type=int, default=NatConfig.steps)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # a tiny model: one thread keeps runs identical and leaves the other core free
    config = NatConfig(seed=args.seed, steps=args.steps)
    models, metrics = {}, {}
    for name in MODELS:
        models[name], metrics[name] = train(name, config)
        m = metrics[name]
        shares = ", ".join(f"{k} {v:.4f}" for k, v in m["heldout"].items())
        print(
            f"{name} ({m['decoding']}, answers {m['answers']}): held-out {shares}; "
            f"{m['decoder_passes']} decoder passes; {m['seconds']} s"
        )
    save(models, metrics, config, args.out)
    print(f"wrote {', '.join(MODELS)} (.safetensors) and runs.json to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
