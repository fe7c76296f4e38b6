"""Cost of explaining one generation step against one forward at the same length (SmolLM2).

Goals: gradient x input within 4x of a forward (one forward and one backward); integrated gradients
with n steps within (n + 2)x; feature ablation within (positions + 1)x (one forward per position and
the unperturbed one, batched). Each time is the median of the repeats.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import torch

from txviz.explain.attribution import Target, attribute_step, decoder_forward, embed
from txviz.models import load

TEXT = (
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
    "combined movable metal type, oil-based ink and a wooden screw press into one workshop. "
)
CONTEXTS = (64, 256)


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``repeats`` calls."""
    times = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def context_ids(loaded, n: int) -> tuple[int, ...]:
    """The first ``n`` ids of the text said over and over."""
    text, ids = TEXT, []
    while len(ids) < n:
        text += TEXT
        ids = loaded.tokenizer(text)["input_ids"]
    return tuple(ids[:n])


def main(argv: list[str] | None = None) -> int:
    """Print, per context length and method, the seconds of one step's attribution and its ratio to a forward."""
    parser = argparse.ArgumentParser(prog="python -m txviz bench explain", description=__doc__)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS))
    parser.add_argument("--repeats", type=int, default=3, help="timings per measurement; the median counts")
    parser.add_argument("--ig-steps", type=int, default=16)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (1: steady on a shared machine)"
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    loaded = load(args.model, device="cpu", progress=print)
    print(f"{loaded.name} on cpu, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}")
    print("| context | method | seconds | ratio to a forward | goal |")
    print("|---|---|---|---|---|")
    gradient_ratio = None
    for n in args.contexts:
        context = context_ids(loaded, n)  # the n tokens a step reads
        target = Target(0)  # the cost does not depend on which token is explained
        forward, embeds = decoder_forward(loaded, target), embed(loaded, context)
        forward(embeds)  # warm-up: first calls allocate and pick kernels
        with torch.no_grad():
            base = median_seconds(lambda f=forward, e=embeds: f(e), args.repeats)
        print(f"| {n} | one forward | {base:.3f} | 1.00x | |")
        goals = {"gradient": 4, "ig": args.ig_steps + 2, "ablation": n + 1}
        for method, goal in goals.items():
            seconds = median_seconds(
                lambda m=method, c=context, t=target: attribute_step(loaded, c, t, m, args.ig_steps),
                args.repeats,
            )
            ratio = seconds / base
            met = "met" if ratio <= goal else "missed"
            print(f"| {n} | {method} | {seconds:.3f} | {ratio:.2f}x | {goal}x ({met}) |")
            if method == "gradient":
                gradient_ratio = ratio
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(f"gradient x input / forward at {args.contexts[-1]} tokens = {gradient_ratio:.2f}x")
    return 0
