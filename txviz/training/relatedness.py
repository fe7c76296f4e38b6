"""Train decomposable attention for a 0-5 relatedness score on generated pairs; write assets/relatedness/."""

from __future__ import annotations

from txviz.entailment.relatedness import ASSETS_DIR, RelatednessConfig, save, train
from txviz.training import _trainer


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped model (fixed seed, one thread); print held-out errors against the baselines."""
    config, out = _trainer.config_and_out(argv, "relatedness", __doc__, RelatednessConfig, ASSETS_DIR)
    from txviz import models
    from txviz.entailment.vectors import WordVectors

    _trainer.one_thread()
    vectors = WordVectors.from_loaded(models.load("minilm", "cpu"))
    model, runs = train(config, vectors)
    for name, e in runs["heldout"].items():
        print(f"{name}: held-out RMSE {e['rmse']:.4f}, MAE {e['mae']:.4f}, Pearson r {e['pearson']:.4f}")
    save(model, runs, out)
    print(f"trained in {runs['seconds']} s; wrote relatedness.safetensors and runs.json to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
