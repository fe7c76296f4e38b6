"""Command line: `python -m txviz trace|bench|train|models ...` for scripts, exports and benchmarks."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from pathlib import Path

import numpy as np

import txviz.bench
import txviz.training


def _modules(package) -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def trace_command(args: argparse.Namespace) -> int:
    """Write one text's tokens and attention weights as .npz or JSON."""
    from txviz import models
    from txviz.tracing import trace_text

    try:
        loaded = models.load(args.model, args.device)
        trace = trace_text(loaded, args.text, max_tokens=args.max_tokens)
    except (ValueError, models.ModelLoadError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if trace.notice:
        print(trace.notice, file=sys.stderr)
    out = Path(args.out)
    if args.format == "json":
        out.write_text(
            json.dumps(
                {
                    "model": trace.model_name,
                    "kind": trace.kind,
                    "tokens": list(trace.query_tokens),
                    "layer_names": list(trace.layer_names),
                    "weights": np.round(trace.weights, 6).tolist(),
                }
            )
        )
    else:
        np.savez_compressed(
            out,
            tokens=np.array(trace.query_tokens),
            weights=trace.weights,
            layer_names=np.array(trace.layer_names),
            model=trace.model_name,
        )
    print(f"{out}: {trace.n_layers} layers x {trace.n_heads} heads x {len(trace.query_tokens)} tokens")
    return 0


def models_command(args: argparse.Namespace) -> int:
    """List every model with whether it can load now."""
    from txviz import models

    for m in models.available():
        state = "ready" if m.loadable else f"unavailable: {m.reason}"
        print(f"{m.name:<16} {m.kind:<16} {m.parameters:>7}  {state}  ({m.source})")
    return 0


def run_module(package, name: str, argv: list[str]) -> int:
    """Run NAME.main(argv) from the bench or training package (or every bench for 'all')."""
    names = _modules(package)
    if name == "all" and package is txviz.bench:
        return max((run_module(package, n, argv) for n in names), default=0)
    if name not in names:
        print(f"error: unknown '{name}'; choose from {', '.join(names)}", file=sys.stderr)
        return 2
    return importlib.import_module(f"{package.__name__}.{name}").main(argv) or 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    trace = sub.add_parser("trace", help="attention of a text as .npz or JSON")
    trace.add_argument("--model", default="minilm")
    trace.add_argument("--text", required=True)
    trace.add_argument("--out", default="trace.npz")
    trace.add_argument("--format", choices=["npz", "json"], default="npz")
    trace.add_argument("--device", default="auto")
    trace.add_argument("--max-tokens", type=int, default=512)
    sub.add_parser("models", help="list the models")
    for command, package in (("bench", txviz.bench), ("train", txviz.training)):
        p = sub.add_parser(command, help=f"one of: {', '.join(_modules(package))}")
        p.add_argument("name")
        p.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "trace":
        return trace_command(args)
    if args.command == "models":
        return models_command(args)
    package = txviz.bench if args.command == "bench" else txviz.training
    return run_module(package, args.name, args.args)
