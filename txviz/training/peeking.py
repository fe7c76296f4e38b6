"""Train the same tiny decoder with and without its causal mask; write assets/peeking/."""

from __future__ import annotations

from txviz.masks.peeking import ASSETS_DIR, MASKS, PeekConfig, digit_floor, save, train
from txviz.training import _trainer


def _describe(mask: str, m: dict) -> str:
    """One mask's line: its training losses and held-out generation."""
    return (
        f"mask {mask}: training loss {m['train_loss']['all']:.4f} (digits {m['train_loss']['digits']:.4f}, "
        f"answer {m['train_loss']['answer']:.4f}); held-out generation exact "
        f"{m['heldout_generation_exact']:.4f} in {m['seconds']} s"
    )


def main(argv: list[str] | None = None) -> int:
    """Reproduce the shipped decoders (fixed seed, one thread); print losses and held-out generation."""
    config, out = _trainer.config_and_out(argv, "peeking", __doc__, PeekConfig, ASSETS_DIR)
    _trainer.one_thread()
    print(f"floor on the digits for a model that cannot see them: ln 9 = {digit_floor():.4f} nats")
    models, metrics = _trainer.train_each(MASKS, lambda mask: train(mask == "causal", config), _describe)
    save(models, metrics, config, out)
    print(f"wrote causal.safetensors, none.safetensors and runs.json to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
