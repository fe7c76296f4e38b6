"""`python -m txviz patch|ablate`: activation patching grids and ablation sweeps as .npz files."""

from __future__ import annotations

import argparse
import sys

import numpy as np

MODES = ("zero", "mean", "resample")


def _common(parser: argparse.ArgumentParser, out: str) -> None:
    parser.add_argument("--model", default="smollm2")
    parser.add_argument(
        "--answer", required=True, help='the expected next token, e.g. " Mary" (its first token)'
    )
    parser.add_argument("--out", default=out)
    parser.add_argument("--device", default="auto")


def add_patch_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser, "patch.npz")
    parser.add_argument("--clean", required=True, help="the prompt whose activations are patched in")
    parser.add_argument("--corrupt", required=True, help="the prompt patched (same number of tokens)")
    parser.add_argument(
        "--wrong", required=True, help='the wrong answer, e.g. " John": metric = logit difference'
    )


def add_ablate_arguments(parser: argparse.ArgumentParser) -> None:
    _common(parser, "ablate.npz")
    parser.add_argument("--text", required=True)
    parser.add_argument("--mode", choices=MODES, default="zero")
    parser.add_argument(
        "--reference", default="", help="text averaged over (mean) or resampled from (resample)"
    )


def _fail(error: Exception) -> int:
    print(f"error: {error}", file=sys.stderr)
    return 2


def run_patch(args: argparse.Namespace) -> int:
    """Exact and attribution patching of clean into corrupt; recovered fractions in the .npz."""
    from txviz import models
    from txviz.interventions import metrics, patching

    try:
        loaded = models.load(args.model, args.device)
        metric = metrics.make_metric(loaded, "logit_difference", args.answer, args.wrong)
        result = patching.patch(loaded, args.clean, args.corrupt, metric)
    except ValueError as error:  # UserError, ModelLoadError
        return _fail(error)
    if metric.notice:
        print(metric.notice, file=sys.stderr)
    np.savez_compressed(args.out, **result.arrays())
    print(
        f"{args.out}: residual {result.residual.shape}, heads {result.heads.shape}, ffn {result.ffn.shape}; "
        f"{metric.label}: clean {result.clean_value:.3f}, corrupt {result.corrupt_value:.3f}; "
        f"rank correlation of the attribution estimate: residual {result.residual_rho:.2f}, "
        f"heads {result.heads_rho:.2f}"
    )
    return 0


def run_ablate(args: argparse.Namespace) -> int:
    """Every head and every MLP ablated alone: the change of the answer's log-probability."""
    from txviz import models
    from txviz.interventions import ablation, metrics

    try:
        loaded = models.load(args.model, args.device)
        metric = metrics.make_metric(loaded, "log_probability", args.answer)
        result = ablation.sweep(loaded, args.text, metric, args.mode, args.reference)
    except ValueError as error:
        return _fail(error)
    if metric.notice:
        print(metric.notice, file=sys.stderr)
    np.savez_compressed(args.out, **result.arrays())
    layer, head = np.unravel_index(int(np.argmin(result.heads)), result.heads.shape)
    print(
        f"{args.out}: heads {result.heads.shape}, ffn {result.ffn.shape} ({args.mode} ablation); "
        f"log p('{metric.answer_token}') = {result.base:.3f}; largest drop: layer {layer} head {head} "
        f"({result.heads[layer, head]:+.3f}), MLP {int(np.argmin(result.ffn))} ({result.ffn.min():+.3f})"
    )
    return 0
