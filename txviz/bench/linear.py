"""Softmax attention (n x n matrix) against linear attention (d x d state): time per head as n grows."""

from __future__ import annotations

import argparse

import torch

from txviz.selfattention.linear import time_both

SIZES = (256, 512, 1024, 2048, 4096)


def main(argv: list[str] | None = None) -> int:
    """Print a markdown table of both timings and their ratio, measured in this run."""
    parser = argparse.ArgumentParser(prog="python -m txviz bench linear", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--dim", type=int, default=64, help="head dimension d")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls of each; the median counts")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (1: steady on a shared machine)"
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = time_both(args.sizes, args.dim, args.repeats)
    print(f"d = {args.dim}, {torch.get_num_threads()} thread(s), median of {args.repeats}")
    print("| n | softmax ms | linear ms | ratio softmax / linear |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row.n} | {row.softmax_s * 1e3:.3f} | {row.linear_s * 1e3:.3f} | {row.ratio:.2f}x |")
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        growth = last.n / first.n
        print(
            f"n grew {growth:.0f}x: softmax time grew {last.softmax_s / first.softmax_s:.1f}x "
            f"(n² would be {growth**2:.0f}x), linear time grew {last.linear_s / first.linear_s:.1f}x "
            f"(n would be {growth:.0f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
