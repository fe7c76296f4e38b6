"""Capture cost: trace_text against a plain forward and transformers' ``output_attentions``, and the
whole-model grid's size and build time."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

from txviz import models
from txviz.core.tracing import trace_text
from txviz.figures.attention import attention_heatmap, heads_mosaic

TEXT = "The quick brown fox jumps over the lazy dog while the cat watches from the warm window. "


def text_of(loaded, n_tokens: int) -> str:
    """A text that tokenises to exactly n_tokens for this model (specials included)."""
    ids = loaded.tokenizer(TEXT * (n_tokens // 8 + 2), add_special_tokens=False)["input_ids"]
    n_special = len(loaded.tokenizer("a")["input_ids"]) - len(
        loaded.tokenizer("a", add_special_tokens=False)["input_ids"]
    )
    return loaded.tokenizer.decode(ids[: n_tokens - n_special])


def timed_pair(first, second, repeats: int) -> tuple[dict, dict]:
    """Median wall and CPU seconds of two functions, run alternately so drifting load hits both."""
    first(), second()  # warm-up
    samples = {0: {"wall": [], "cpu": []}, 1: {"wall": [], "cpu": []}}
    for _ in range(repeats):
        for index, fn in enumerate((first, second)):
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            samples[index]["wall"].append(time.perf_counter() - wall)
            samples[index]["cpu"].append(time.process_time() - cpu)
    return tuple({k: statistics.median(v) for k, v in samples[i].items()} for i in (0, 1))


def capture_overhead(
    name: str, n_tokens: int, repeats: int, device: str = "cpu", dtype: str = "float32"
) -> dict:
    loaded = models.load(name, device, dtype=dtype)
    text = text_of(loaded, n_tokens)
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]], device=device)

    def plain():
        with torch.no_grad():
            loaded.model(input_ids=ids)
        if device.startswith("cuda"):  # kernels run asynchronously: wait for them (trace_text copies to CPU)
            torch.cuda.synchronize()

    base, traced = timed_pair(plain, lambda: trace_text(loaded, text), repeats)
    return {
        "model": name,
        "tokens": ids.shape[1],
        "plain": base,
        "trace": traced,
        "ratio": traced["wall"] / base["wall"],
        "cpu_ratio": traced["cpu"] / base["cpu"],
    }


def grid_cost(n_tokens: int) -> dict:
    loaded = models.load("smollm2", "cpu")
    trace = trace_text(loaded, text_of(loaded, n_tokens))
    start = time.perf_counter()
    grid_bytes = len(heads_mosaic(trace.weights, tile_size=48).to_json())
    grid_s = time.perf_counter() - start
    # Baseline: one head as a per-cell heatmap, times the number of heads.
    one_head = len(attention_heatmap(trace.head(0, 0), trace.query_tokens, trace.key_tokens).to_json())
    heads = trace.n_layers * trace.n_heads
    return {
        "tokens": len(trace.query_tokens),
        "heads": heads,
        "grid_bytes": grid_bytes,
        "grid_s": grid_s,
        "per_cell_bytes": one_head * heads,
    }


def print_row(r: dict, label: str = "") -> None:
    print(
        f"| {r['model']}{label} | {r['tokens']} | {r['plain']['wall'] * 1e3:.1f} ms | {r['trace']['wall'] * 1e3:.1f} ms "
        f"| {r['ratio']:.2f}x | {r['cpu_ratio']:.2f}x |"
    )


def gpu_rows(repeats: int) -> None:
    """The same table on the GPU in each precision, when there is one."""
    if not torch.cuda.is_available():
        print("\nno GPU here: the GPU rows (float32, bfloat16, float16 on cuda) are skipped")
        return
    print(
        f"\n## the same on {torch.cuda.get_device_name()} (records are float32 CPU copies in every precision)\n"
    )
    print("| model | tokens | plain forward | trace_text | wall ratio (goal <= 1.5) | CPU-time ratio |")
    print("|---|---|---|---|---|---|")
    for dtype in models.PRECISIONS:
        for name, n in (("minilm", 128), ("smollm2", 256)):
            print_row(capture_overhead(name, n, repeats, "cuda", dtype), f", cuda {dtype}")


CASES = ("plain", "output_attentions", "trace")  # SDPA forward, eager with every layer's weights, trace_text


def child(case: str, n_tokens: int, repeats: int) -> dict:
    """``case`` on SmolLM2 in this (fresh) process, 1 torch thread: median wall and CPU seconds and
    the peak RSS of repeats.

    The peak is the process's own (VmHWM, the kernel's count, reset before each call), so it holds
    the model as well as what the call allocated, as a user's server would. CPU seconds (user and
    system, so page faults count) are what a busy shared machine distorts least.
    """
    from txviz.bench.measure import _read_rss, _reset_peak

    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    loaded = models.load("smollm2", "cpu")
    if case == "output_attentions":
        loaded.model.set_attn_implementation("eager")
    text = text_of(loaded, n_tokens)
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])
    calls = {
        "plain": lambda i, t: loaded.model(input_ids=i),
        "output_attentions": lambda i, t: loaded.model(input_ids=i, output_attentions=True).attentions,
        "trace": lambda i, t: trace_text(loaded, t, max_tokens=None, budget_mb=float("inf")).weights,
    }
    call = calls[case]
    warm = text_of(loaded, 16)
    call(torch.tensor([loaded.tokenizer(warm)["input_ids"]]), warm)  # lazy set-up out of the count
    seconds, cpu, peaks = [], [], []
    for _ in range(repeats):
        _reset_peak()
        start, start_cpu = time.perf_counter(), time.process_time()
        result = call(ids, text)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        peaks.append(_read_rss()[1])
        del result
    median = statistics.median
    return {"case": case, "wall": median(seconds), "cpu": median(cpu), "peak": max(peaks)}


def in_fresh_process(case: str, n_tokens: int, repeats: int) -> dict:
    """``child(case, n_tokens, repeats)`` in a new Python process: its peak memory is that case's alone."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    code = (
        "import json; from txviz.bench.capture import child; "
        f"print(json.dumps(child({case!r}, {n_tokens}, {repeats})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def long_inputs(tokens: list[int], repeats: int) -> str:
    """The table of trace_text, output_attentions and a plain forward at each length; the summary line."""
    print(
        "\n## every layer's attention of one text, SmolLM2, 1 torch thread: each case in a fresh process, "
        f"median of {repeats} calls; time = CPU seconds (wall in brackets), peak = the process's peak RSS "
        "(VmHWM, model included)\n"
    )
    print(
        "| tokens | plain forward | output_attentions | trace_text | trace / plain time ratio | "
        "output_attentions / plain time ratio | trace / output_attentions time ratio | "
        "trace / output_attentions peak ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    last = ""
    for n in tokens:
        med = {case: in_fresh_process(case, n, repeats) for case in CASES}
        plain, eager, traced = med["plain"], med["output_attentions"], med["trace"]
        cell = lambda m: f"{m['cpu']:.2f} s ({m['wall']:.2f} s), {m['peak'] / 2**30:.2f} GB"  # noqa: E731
        time_ratio, peak_ratio = traced["cpu"] / eager["cpu"], traced["peak"] / eager["peak"]
        print(
            f"| {n} | {cell(plain)} | {cell(eager)} | {cell(traced)} "
            f"| {traced['cpu'] / plain['cpu']:.2f}x | {eager['cpu'] / plain['cpu']:.2f}x "
            f"| {time_ratio:.2f}x | {peak_ratio:.2f}x |"
        )
        if n == 1024 or not last:
            last = f"trace / output_attentions at {n} tokens = {time_ratio:.2f}x time, {peak_ratio:.2f}x peak memory"
    return last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench capture", description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--tokens", default="256,1024,2048", help="lengths for trace_text vs output_attentions, e.g. 256,1024"
    )
    parser.add_argument("--long-repeats", type=int, default=3, help="timed calls per case and length")
    parser.add_argument("--only-long", action="store_true", help="skip the short table and the grid")
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
    if args.only_long:
        print(long_inputs(tokens, args.long_repeats))
        return 0
    print(
        "## capture: trace_text (every layer and head recorded) vs a plain forward (SDPA, nothing recorded)\n"
    )
    print("| model | tokens | plain forward | trace_text | wall ratio (goal <= 1.5) | CPU-time ratio |")
    print("|---|---|---|---|---|---|")
    for name, n in (("minilm", 128), ("smollm2", 256)):
        print_row(capture_overhead(name, n, args.repeats))
    gpu_rows(args.repeats)
    g = grid_cost(512)
    print(f"\n## whole-model grid, SmolLM2, {g['tokens']} tokens, {g['heads']} heads\n")
    print("| figure | bytes to browser | build time |")
    print("|---|---|---|")
    print(f"| PNG mosaic (what the page sends) | {g['grid_bytes'] / 1e6:.2f} MB | {g['grid_s']:.2f} s |")
    print(
        f"| per-cell heatmaps (baseline, one head x {g['heads']}) | {g['per_cell_bytes'] / 1e6:.0f} MB | - |"
    )
    print(
        f"\nratio of bytes, mosaic / per-cell: {g['grid_bytes'] / g['per_cell_bytes']:.4f} "
        f"(goal: under 10 MB and 2 s)"
    )
    print(long_inputs(tokens, args.long_repeats))
    return 0 if np.isfinite(g["grid_s"]) else 1
