"""Interventions against plain forwards of the same shape, measured in the same run (SmolLM2, 32 tokens).

Every-head zero-ablation sweep (one ablation per batch row) vs the same batches run plain; exact
residual patching (one (layer, position) cell per row) vs the same batches run plain; attribution
patching (one forward of both prompts as two batch rows, one backward) vs one forward; one interactive
intervention vs one forward; and the attribution estimate's rank correlation with the exact grid.
The per-batch cost is what a ratio compares, so --sweep-layers and --patch-layers may measure fewer
batches than the whole grid on a slow machine; the defaults measure all of it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch

from txviz import models
from txviz.bench.capture import text_of
from txviz.core.edits import Ablate
from txviz.interventions import ablation, metrics, patching
from txviz.interventions.runs import forward, repeated

N_TOKENS = 32
TEMPLATE = "When Mary and John went to the store, {} gave a drink to"
FILLER = "It was a warm and quiet afternoon in the small town, and the shops were open."


def prompts(loaded) -> tuple[str, str]:
    """A clean and a corrupted prompt of exactly N_TOKENS tokens (IOI: the subject's name changes)."""
    words = FILLER.split()
    for n in range(len(words), 0, -1):
        start = " ".join(words[:n]).rstrip(",.") + ". "
        clean, corrupt = (start + TEMPLATE.format(name) for name in ("John", "Mary"))
        lengths = {len(loaded.tokenizer(t)["input_ids"]) for t in (clean, corrupt)}
        if lengths == {N_TOKENS}:
            return clean, corrupt
    raise RuntimeError(f"No prompt pair of {N_TOKENS} tokens found for this tokenizer.")


def medians(pairs: dict, repeats: int) -> dict:
    """Median wall and CPU seconds of each function, run in turn each repeat so drifting load hits all alike.

    CPU time (of the whole process, every thread) is steadier than wall time on a shared machine.
    """
    samples = {name: {"wall": [], "cpu": []} for name in pairs}
    for _ in range(repeats):
        for name, fn in pairs.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            samples[name]["wall"].append(time.perf_counter() - wall)
            samples[name]["cpu"].append(time.process_time() - cpu)
    return {name: {k: statistics.median(v) for k, v in kinds.items()} for name, kinds in samples.items()}


def row(what: str, work: str, timed: dict, plain: dict, goal: str) -> str:
    """One table row: times, the wall ratio and the CPU-time ratio against the plain baseline."""
    unit, scale = ("s", 1) if timed["wall"] >= 10 else ("ms", 1e3)
    return (
        f"| {what} | {work} | {timed['wall'] * scale:.{0 if unit == 'ms' else 2}f} {unit} | "
        f"{plain['wall'] * scale:.{0 if unit == 'ms' else 2}f} {unit} | {timed['wall'] / plain['wall']:.2f}x | "
        f"{timed['cpu'] / plain['cpu']:.2f}x | {goal} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench interventions", description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sweep-layers", type=int, default=0, help="layers of heads swept (0: all)")
    parser.add_argument("--patch-layers", type=int, default=0, help="residual rows patched (0: all)")
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads (0 keeps torch's default; 1 is steadier on a busy machine)",
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    load = os.getloadavg()[0]
    loaded = models.load("smollm2", "cpu")
    clean, corrupt = prompts(loaded)
    metric = metrics.make_metric(loaded, "logit_difference", " Mary", " John")
    ids = loaded.tokenizer(corrupt)["input_ids"]
    clean_ids = loaded.tokenizer(clean)["input_ids"]
    n_layers, n_heads = loaded.n_layers, loaded.n_heads
    sweep_layers = args.sweep_layers or n_layers
    rows = list(range(n_layers + 1))
    if args.patch_layers:  # evenly spaced inner rows: the first and last rows are the easy ones
        rows = [int(r) for r in np.linspace(0, n_layers, args.patch_layers + 2)[1:-1].round()]
    patch_rows = len(rows)

    heads = [c for c in ablation.every_component(loaded, ffns=False) if c.layer < sweep_layers]
    head_jobs = [[ablation.intervention(c, None)] for c in heads]
    batch = ablation.SWEEP_BATCH
    n_batches = -(-len(head_jobs) // batch)

    def sweep():
        ablation.batched_metrics(loaded, ids, metric, head_jobs, batch)

    def sweep_plain():
        for start in range(0, len(head_jobs), batch):
            forward(loaded, repeated(ids, min(batch, len(head_jobs) - start)))

    acts = patching.activations(loaded, clean_ids, ids, metric)
    every_cell = patching.patch_jobs(acts, n_layers, n_heads, N_TOKENS)["residual"]
    cells = [every_cell[r * N_TOKENS + p] for r in rows for p in range(N_TOKENS)]
    exact = {}

    def patch():
        exact["values"] = ablation.batched_metrics(loaded, ids, metric, cells, patching.PATCH_BATCH)

    def patch_plain():
        for start in range(0, len(cells), patching.PATCH_BATCH):
            forward(loaded, repeated(ids, min(patching.PATCH_BATCH, len(cells) - start)))

    one = repeated(ids, 1)
    interventions = [Ablate("head_out", n_layers // 2, 0)]
    print(
        f"## interventions: SmolLM2, {N_TOKENS}-token prompts, {torch.get_num_threads()} threads, "
        f"load average {load:.2f} at start, medians of {args.repeats}\n"
    )
    forward(loaded, one)  # warm-up
    small = medians(
        {
            "forward": lambda: forward(loaded, one),
            "intervention": lambda: metric(forward(loaded, one, interventions).logits[:, -1]),
            "attribution": lambda: patching.attribution(patching.activations(loaded, clean_ids, ids, metric)),
        },
        args.repeats,
    )
    big = medians(
        {"sweep": sweep, "sweep_plain": sweep_plain, "patch": patch, "patch_plain": patch_plain}, args.repeats
    )
    fractions = metrics.recovered(exact["values"], acts.clean_value, acts.corrupt_value).reshape(
        patch_rows, N_TOKENS
    )
    estimate = patching.attribution(acts).residual[rows]
    rho = patching.rank_correlation(fractions, estimate)

    print("| measurement | work | time | plain | wall ratio | CPU-time ratio | goal |")
    print("|---|---|---|---|---|---|---|")
    sweep_work = f"{len(head_jobs)} heads, {n_batches} batches of {batch}"
    print(row("every-head zero-ablation sweep", sweep_work, big["sweep"], big["sweep_plain"], "1.3x"))
    patch_work = f"{patch_rows} x {N_TOKENS} cells, batches of {patching.PATCH_BATCH}"
    print(row("exact residual patching", patch_work, big["patch"], big["patch_plain"], "1.3x"))
    attribution_work = "1 two-row forward + 1 backward, every cell's estimate"
    print(row("attribution patching", attribution_work, small["attribution"], small["forward"], "3x"))
    print(
        row(
            "one interactive intervention",
            "one head ablated",
            small["intervention"],
            small["forward"],
            "1.5x",
        )
    )
    page_text = text_of(loaded, 64)
    page = medians(
        {
            "page": lambda: ablation.ablate(
                loaded, page_text, metric, [ablation.Component("head_out", 5, 1)], view=(6, 1)
            )
        },
        args.repeats,
    )["page"]
    print(
        f"\none ablation as the page runs it (plain and ablated runs, attention recorded), 64 tokens: "
        f"{page['wall']:.2f} s"
    )
    print(
        f"attribution estimate vs exact residual grid (rows {rows[0]}-{rows[-1]}, {patch_rows} x {N_TOKENS} cells): "
        f"Spearman rank correlation {rho:.3f}"
    )
    if sweep_layers < n_layers or patch_rows < n_layers + 1:
        print(
            f"(measured {sweep_layers} of {n_layers} layers of heads and {patch_rows} of {n_layers + 1} residual "
            "rows: whole batches, the same per-batch work as the full grids)"
        )
    print(
        f"\nevery-head ablation sweep / plain forwards = {big['sweep']['wall'] / big['sweep_plain']['wall']:.2f}x"
    )
    return 0 if np.isfinite(rho) else 1
