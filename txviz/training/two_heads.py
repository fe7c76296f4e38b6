"""Train the one-head and two-head models of the several-heads toy; write assets/two_heads/."""

from __future__ import annotations

from txviz.selfattention.twoheads import ASSETS_DIR, HEADS, TwoHeadsConfig, save, train
from txviz.training import _trainer


def _describe(heads: int, m: dict) -> str:
    """One model's line: its held-out accuracies."""
    return (
        f"{heads} head{'s' * (heads > 1)}: held-out subject {m['subject']:.4f}, object {m['object']:.4f}, "
        f"both {m['both']:.4f} in {m['seconds']} s"
    )


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped models (fixed seed, one thread); print held-out accuracy against chance."""
    config, out = _trainer.config_and_out(argv, "two_heads", __doc__, TwoHeadsConfig, ASSETS_DIR)
    _trainer.one_thread()
    print(f"chance: {1 / config.symbols:.4f} per answer, {1 / config.symbols**2:.4f} for both")
    models, metrics = _trainer.train_each(HEADS, lambda heads: train(heads, config), _describe)
    save(models, metrics, config, out)
    print(f"wrote heads_1.safetensors, heads_2.safetensors and runs.json to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
