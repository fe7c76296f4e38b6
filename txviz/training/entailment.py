"""Train decomposable attention and a bag-of-words baseline for entailment; write assets/entailment/."""

from __future__ import annotations

import time

from txviz.entailment.train import ASSETS_DIR, TrainConfig, save, train_all
from txviz.training import _trainer


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped models (fixed seed); print held-out accuracy of both."""
    parser = _trainer.parser("entailment", __doc__, TrainConfig, ASSETS_DIR)
    parser.add_argument("--train-pairs", type=int, default=TrainConfig.train_pairs)
    args = parser.parse_args(argv)
    from txviz import models
    from txviz.entailment.vectors import WordVectors

    _trainer.one_thread()
    vectors = WordVectors.from_loaded(models.load("minilm", "cpu"))
    config = TrainConfig(seed=args.seed, steps=args.steps, train_pairs=args.train_pairs)
    start = time.perf_counter()

    def report(name: str, step: int, total: int, loss: float) -> None:
        print(f"{name:>13} step {step}/{total} loss {loss:.3f}", flush=True)

    trained, metrics = train_all(config, vectors, report)
    for name in trained:
        m = metrics[name]
        print(
            f"{name:>13}: held-out accuracy {m['heldout_accuracy']:.4f} (train {m['train_accuracy']:.4f}) in {m['train_seconds']} s"
        )
    save(trained, metrics, args.out)
    print(f"wrote {args.out} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
