"""Train the mixture of experts and its two dense baselines on the four-region toy; write assets/moe/."""

from __future__ import annotations

import json

from txviz.block.moe import ASSETS_DIR, MODELS, MoEConfig, save, train
from txviz.training import _trainer


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped models (fixed seed, one thread); print held-out error against the baseline."""
    config, out = _trainer.config_and_out(argv, "moe", __doc__, MoEConfig, ASSETS_DIR)
    _trainer.one_thread()
    models, metrics = _trainer.train_each(
        MODELS,
        lambda name: train(name, config),
        lambda name, m: (
            f"{name}: {m['weights']} weights, held-out MSE {m['held_out_mse']:.4f} in {m['seconds']} s"
        ),
    )
    save(models, metrics, config, out)
    baseline = json.loads((out / "runs.json").read_text())["predict_the_mean_mse"]
    print(f"predict-the-mean baseline MSE: {baseline:.4f} (same held-out points)")
    print(f"wrote model_0..2.safetensors and runs.json to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
