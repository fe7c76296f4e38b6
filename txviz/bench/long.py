"""Long documents: the first view (every layer reduced while computed, figures serialised) against a
plain SDPA forward at 1,024, 2,048 and 4,096 tokens; peak memory, bytes to the browser, drill-down.

Each length runs in its own process so peak resident memory (ru_maxrss) does not mix between lengths.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch

LENGTHS = (1024, 2048, 4096)
MODEL = "smollm2"


def _peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def one_length(n_tokens: int, repeats: int, threads: int) -> dict:
    """Timings and memory at one length, in this process."""
    from txviz import models
    from txviz.bench.capture import text_of
    from txviz.longdoc import drill, overview, view_model

    torch.set_grad_enabled(False)
    if threads:
        torch.set_num_threads(threads)
    loaded = models.load(MODEL, "cpu")
    text = text_of(loaded, n_tokens)
    ids = loaded.tokenizer(text)["input_ids"]
    inputs = overview.model_inputs(loaded, ids)

    def plain():
        loaded.model(**inputs, logits_to_keep=1)  # the baseline: SDPA, nothing recorded, last logits only

    def first_view():
        view = overview.overview(loaded, text, n_tokens)
        shown = view_model.first_view(view, view.n_layers - 1, None)
        return view, view_model.first_view_bytes(shown)

    plain()
    peak_plain = _peak_bytes()
    times = {"plain": [], "first": [], "drill": [], "plain_cpu": [], "first_cpu": []}
    for _ in range(repeats):  # alternated, so drifting load hits both alike
        for name, fn in (("plain", plain), ("first", first_view)):
            start, cpu = time.perf_counter(), time.process_time()
            result = fn()
            times[name].append(time.perf_counter() - start)
            times[f"{name}_cpu"].append(time.process_time() - cpu)  # steadier than wall on a busy machine
    view, sent = result
    peak_first = _peak_bytes()
    last = view.n_tokens
    for _ in range(repeats):
        start = time.perf_counter()
        drill.drill_down(loaded, text, n_tokens, view.n_layers // 2, last - drill.MAX_ROWS, last)
        times["drill"].append(time.perf_counter() - start)
    median = {k: statistics.median(v) for k, v in times.items()}
    return {
        "tokens": len(ids),
        **median,
        "ratio": median["first"] / median["plain"],
        "cpu_ratio": median["first_cpu"] / median["plain_cpu"],
        "peak_plain": peak_plain,
        "peak_first": peak_first,
        "bytes": sent,
        "load": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench long", description=__doc__)
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (1: steady on a shared machine; 0 keeps torch's default)",
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process: one length
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_length(args.one, args.repeats, args.threads)), flush=True)
        return 0
    print(f"## long documents: {MODEL}, first view vs a plain SDPA forward (medians of {args.repeats})\n")
    print(
        f"{os.cpu_count()} CPUs, torch threads {args.threads or torch.get_num_threads()}; "
        f"load average before: {os.getloadavg()}\n"
    )
    print(
        "| tokens | plain SDPA | first view | ratio (goal <= 1.5 at 4,096) | CPU-time ratio | peak RSS plain | "
        "peak RSS first view (goal < 2.5 GB) | bytes to browser (goal < 10 MB) | drill-down, one layer | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    results = {}
    for n in args.lengths:
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "txviz",
                "bench",
                "long",
                "--one",
                str(n),
                "--repeats",
                str(args.repeats),
                "--threads",
                str(args.threads),
            ],  # fmt: skip
            capture_output=True,
            text=True,
        )
        if child.returncode:
            print(child.stderr[-2000:], file=sys.stderr)
            return child.returncode
        r = results[n] = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            f"| {r['tokens']:,} | {r['plain']:.2f} s | {r['first']:.2f} s | {r['ratio']:.2f}x | {r['cpu_ratio']:.2f}x | "
            f"{r['peak_plain'] / 1e9:.2f} GB | {r['peak_first'] / 1e9:.2f} GB | {r['bytes'] / 1e6:.2f} MB | "
            f"{r['drill']:.2f} s | {r['load']:.1f} |",
            flush=True,
        )
    if len(results) > 1:
        a, b = min(results), max(results)
        growth = (b / a) ** 2
        print(
            f"\nfrom {a:,} to {b:,} tokens: first view time x{results[b]['first'] / results[a]['first']:.1f}, "
            f"plain x{results[b]['plain'] / results[a]['plain']:.1f} (attention grows x{growth:.0f}, "
            f"the rest x{b / a:.0f}); bytes x{results[b]['bytes'] / results[a]['bytes']:.1f}"
        )
    final = results.get(4096) or results[max(results)]
    print(
        f"\n{final['tokens']:,}-token ratio, first view / plain SDPA forward: {final['ratio']:.2f}x (goal <= 1.5x)"
    )
    return 0
