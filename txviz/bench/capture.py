"""Capture cost: trace_text against a plain forward, and the whole-model grid's size and build time."""

from __future__ import annotations

import argparse
import statistics
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench capture", description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
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
    return 0 if np.isfinite(g["grid_s"]) else 1
