"""What the tiny models' training commands share: their --out/--seed/--steps options and one training loop."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from pathlib import Path


def parser(name: str, doc: str | None, config_type: type, out: Path, out_help: str = "output folder"):
    """A trainer's parser: --out, and --seed and --steps defaulting to the config's."""
    parser = argparse.ArgumentParser(prog=f"python -m txviz train {name}", description=doc)
    parser.add_argument("--out", type=Path, default=out, help=out_help)
    parser.add_argument("--seed", type=int, default=config_type.seed)
    parser.add_argument("--steps", type=int, default=config_type.steps)
    return parser


def config_and_out(argv: list[str] | None, name: str, doc: str | None, config_type: type, out: Path, **kw):
    """The config (its seed and steps from the command line) and the output path of a trainer."""
    args = parser(name, doc, config_type, out, **kw).parse_args(argv)
    return config_type(seed=args.seed, steps=args.steps), args.out


def one_thread() -> None:
    """A tiny model: one thread keeps runs identical and leaves the other core free."""
    import torch

    torch.set_num_threads(1)


def train_each(
    names: Iterable, train: Callable, describe: Callable[[object, dict], str]
) -> tuple[dict, dict]:
    """Train each named model, printing describe(name, metrics) after each; its models and metrics by name."""
    models, metrics = {}, {}
    for name in names:
        models[name], metrics[name] = train(name)
        print(describe(name, metrics[name]))
    return models, metrics
