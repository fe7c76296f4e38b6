"""Command line: `python -m txviz trace|lens|explain|patch|ablate|atlas|features|bench|train|models ...` for scripts, exports and
benchmarks."""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import sys
from pathlib import Path

import txviz.bench
import txviz.training
from txviz import logs
from txviz.atlas import command as atlas_command
from txviz.explain import command as explain_command
from txviz.features import command as features_command
from txviz.figures import export
from txviz.heads import command as heads_command
from txviz.interventions import command as interventions_command
from txviz.whyattend import command as why_command

PRECISION_HELP = "the weights' precision: float32, bfloat16, or float16 on a GPU (records stay float32)"


def _modules(package) -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def _summary(package, name: str) -> str:
    """The first paragraph of NAME's module docstring as one line, read without importing it."""
    source = (Path(package.__path__[0]) / f"{name}.py").read_text(encoding="utf-8")
    return " ".join((ast.get_docstring(ast.parse(source)) or "").split("\n\n")[0].split())


def _listing(package) -> str:
    """Every module of the package, one line each: its name and what it does."""
    names = _modules(package)
    width = max(map(len, names))
    return "\n".join(f"  {name:<{width}}  {_summary(package, name)}" for name in names)


def _trace_or_error(args: argparse.Namespace):
    """The trace the arguments ask for, or None after printing a clear error."""
    from txviz import models
    from txviz.core.errors import UserError
    from txviz.core.tracing import trace_text

    try:
        loaded = models.load(args.model, args.device, dtype=args.dtype)
        trace = trace_text(loaded, args.text, max_tokens=args.max_tokens)
    except UserError as error:  # ModelLoadError, WrongModelKind, empty text...
        print(f"error: {error}", file=sys.stderr)
        return None
    if trace.notice:
        print(trace.notice, file=sys.stderr)
    return trace


def trace_command(args: argparse.Namespace) -> int:
    """Write one text's tokens and attention weights as .npz or JSON."""
    trace = _trace_or_error(args)
    if trace is None:
        return 2
    data = export.trace_json(trace) if args.format == "json" else export.trace_npz(trace)
    Path(args.out).write_bytes(data)
    print(f"{args.out}: {trace.n_layers} layers x {trace.n_heads} heads x {len(trace.query_tokens)} tokens")
    return 0


def export_command(args: argparse.Namespace) -> int:
    """Write one figure (a head's heatmap or the whole-model grid) as PNG, SVG, HTML or JSON."""
    from txviz.figures.attention import attention_heatmap, heads_mosaic

    trace = _trace_or_error(args)
    if trace is None:
        return 2
    if not (0 <= args.layer < trace.n_layers and 0 <= args.head < trace.n_heads):
        print(f"error: layer must be 0-{trace.n_layers - 1} and head 0-{trace.n_heads - 1}", file=sys.stderr)
        return 2
    if args.view == "grid":
        figure = heads_mosaic(trace.weights, title=f"{trace.model_name}: every layer and head")
    else:
        title = f"{trace.model_name}: layer {args.layer}, head {args.head}"
        figure = attention_heatmap(
            trace.head(args.layer, args.head), trace.query_tokens, trace.key_tokens, title
        )
    fmt = Path(args.out).suffix.lstrip(".").lower()
    makers = {
        "html": export.figure_html,
        "json": export.figure_numbers,
        "png": lambda f: export.figure_image(f, "png"),
        "svg": lambda f: export.figure_image(f, "svg"),
    }
    if fmt not in makers:
        print(f"error: the output must end in one of .{', .'.join(makers)}", file=sys.stderr)
        return 2
    try:
        Path(args.out).write_bytes(makers[fmt](figure))
    except export.ExportUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{args.out}: {args.view} of {trace.model_name}")
    return 0


def lens_command(args: argparse.Namespace) -> int:
    """Write the logit lens of a text (top_ids, top_probs, tokens) as .npz or JSON."""
    from txviz import models
    from txviz.block.lens import lens_bytes, lens_of_text
    from txviz.core.errors import UserError

    try:
        loaded = models.load(args.model, args.device, dtype=args.dtype)
        lens, notice = lens_of_text(loaded, args.text, args.max_tokens)
    except UserError as error:  # ModelLoadError, NoLensError...
        print(f"error: {error}", file=sys.stderr)
        return 2
    if notice:
        print(notice, file=sys.stderr)
    Path(args.out).write_bytes(lens_bytes(lens, args.format))
    print(f"{args.out}: {lens.top_ids.shape[0]} rows (embeddings + layers) x {lens.top_ids.shape[1]} tokens")
    return 0


def families_command(args: argparse.Namespace) -> int:
    """Check every feature on a tiny model of each family and write the table as Markdown."""
    import tempfile

    from txviz.families import matrix

    with tempfile.TemporaryDirectory() as root:
        results = matrix.matrix(Path(root))
    matrix.write_doc(results, Path(args.out))
    print(f"{args.out}: {len(results)} families x {len(matrix.FEATURES)} features")
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
    name = name.replace("-", "_")  # `bench why-attend` runs why_attend.py
    if name == "all" and package is txviz.bench:
        from txviz.bench._all import run_all

        return run_all(names, argv)
    if name not in names:
        print(f"error: unknown '{name}'; choose from {', '.join(names)}", file=sys.stderr)
        return 2
    return importlib.import_module(f"{package.__name__}.{name}").main(argv) or 0


def build_parser() -> argparse.ArgumentParser:
    """Every command and its options."""
    parser = argparse.ArgumentParser(prog="python -m txviz", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    traced = argparse.ArgumentParser(add_help=False)  # the model and text options of trace and export
    traced.add_argument("--model", default="minilm")
    traced.add_argument("--text", required=True)
    traced.add_argument("--device", default="auto")
    traced.add_argument("--dtype", default="float32", help=PRECISION_HELP)
    traced.add_argument("--max-tokens", type=int, default=512)
    trace = sub.add_parser("trace", parents=[traced], help="attention of a text as .npz or JSON")
    trace.add_argument("--out", default="trace.npz")
    trace.add_argument("--format", choices=["npz", "json"], default="npz")
    figure = sub.add_parser(
        "export", parents=[traced], help="a figure as .png, .svg, .html or .json (by the --out suffix)"
    )
    figure.add_argument("--out", default="figure.png", help="the format follows the suffix")
    figure.add_argument("--view", choices=["head", "grid"], default="head")
    figure.add_argument("--layer", type=int, default=0)
    figure.add_argument("--head", type=int, default=0)
    lens = sub.add_parser("lens", help="the logit lens of a text as .npz or JSON")
    for flag, default in (("--model", "smollm2"), ("--out", "lens.npz"), ("--device", "auto")):
        lens.add_argument(flag, default=default)
    lens.add_argument("--text", required=True)
    lens.add_argument("--dtype", default="float32", help=PRECISION_HELP)
    lens.add_argument("--format", choices=["npz", "json"], default="npz")
    lens.add_argument("--max-tokens", type=int, default=256)
    sub.add_parser("models", help="list the models")
    families = sub.add_parser("families", help="check every feature on tiny models of many families")
    families.add_argument("--out", default="docs/model-families.md")
    heads_command.add_arguments(sub.add_parser("heads", help="every head's detector scores as .npz"))
    atlas_command.add_arguments(
        sub.add_parser("atlas", help="build a model's Head Atlas over a corpus and store it (or open it)")
    )
    features_command.add_arguments(
        sub.add_parser(
            "features", help="train a sparse autoencoder at a place of a model and store it (or open it)"
        )
    )
    sub.add_parser(
        "explain",
        parents=[explain_command.options()],
        help="every generated token's attribution, attention and lens as .npz",
    )
    interventions_command.add_patch_arguments(
        sub.add_parser("patch", help="activation patching grids (exact and attribution) as .npz")
    )
    interventions_command.add_ablate_arguments(
        sub.add_parser("ablate", help="every head and MLP ablated alone: change of the answer's log-prob")
    )
    why_command.add_arguments(
        sub.add_parser(
            "why-attend", help="one attention score split into query-side x key-side parts as .npz"
        )
    )
    bench = sub.add_parser("bench", help=f"one of: {', '.join(_modules(txviz.bench))}")
    bench.add_argument("name")
    bench.add_argument("args", nargs=argparse.REMAINDER)
    train = sub.add_parser(
        "train",
        help=f"one of: {', '.join(_modules(txviz.training))}",
        description=f"Train one of the shipped models (fixed seed). NAME is one of:\n{_listing(txviz.training)}",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # one line per name, as written
    )
    train.add_argument("name", metavar="NAME", help="what to train (listed above)")
    train.add_argument("args", nargs=argparse.REMAINDER, help="passed on to NAME's own options")
    return parser


def main(argv: list[str] | None = None) -> int:
    logs.configure()  # the app's format and TXVIZ_LOG_LEVEL for every command, the benchmarks' too
    args = build_parser().parse_args(argv)
    if args.command == "trace":
        return trace_command(args)
    if args.command == "export":
        return export_command(args)
    if args.command == "lens":
        return lens_command(args)
    if args.command == "models":
        return models_command(args)
    if args.command == "families":
        return families_command(args)
    if args.command == "heads":
        return heads_command.run(args)
    if args.command == "atlas":
        return atlas_command.run(args)
    if args.command == "features":
        return features_command.run(args)
    if args.command == "explain":
        return explain_command.run(args)
    if args.command == "patch":
        return interventions_command.run_patch(args)
    if args.command == "ablate":
        return interventions_command.run_ablate(args)
    if args.command == "why-attend":
        return why_command.run(args)
    package = txviz.bench if args.command == "bench" else txviz.training
    return run_module(package, args.name, args.args)
