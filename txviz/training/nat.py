"""Train the autoregressive and non-autoregressive digit readers (one or two right answers); write assets/nat/."""

from __future__ import annotations

from txviz.seq2seq.nat import ASSETS_DIR, MODELS, NatConfig, save, train
from txviz.training import _trainer


def _describe(name: str, m: dict) -> str:
    """One model's line: its decoding, answers, held-out shares, decoder passes and time."""
    shares = ", ".join(f"{k} {v:.4f}" for k, v in m["heldout"].items())
    return (
        f"{name} ({m['decoding']}, answers {m['answers']}): held-out {shares}; "
        f"{m['decoder_passes']} decoder passes; {m['seconds']} s"
    )


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped translators (fixed seed, one thread); print held-out English/French/neither."""
    config, out = _trainer.config_and_out(argv, "nat", __doc__, NatConfig, ASSETS_DIR)
    _trainer.one_thread()
    models, metrics = _trainer.train_each(MODELS, lambda name: train(name, config), _describe)
    save(models, metrics, config, out)
    print(f"wrote {', '.join(MODELS)} (.safetensors) and runs.json to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
