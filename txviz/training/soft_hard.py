"""Train the soft and hard (REINFORCE) key-value readers and write them to assets/soft_hard/."""

from __future__ import annotations

from txviz.softhard.toy import ASSETS_DIR, METHODS, ToyConfig, save_runs, train
from txviz.training import _trainer


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped runs (fixed seed, one thread); print accuracies and times."""
    config, out = _trainer.config_and_out(argv, "soft_hard", __doc__, ToyConfig, ASSETS_DIR)
    runs = []
    for method in METHODS:
        run = train(method, config)
        print(f"{method:>9}: held-out accuracy {run.final_accuracy:.4f} in {run.seconds:.1f} s")
        runs.append(run)
    save_runs(runs, out)
    print(f"wrote {', '.join(f'{m}.safetensors' for m in METHODS)} and runs.json to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
