"""Block recording cost: every stage of every block recorded vs a plain SDPA forward, and what the
idle stage hooks cost a plain forward (trace_text and every other page)."""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from txviz import models
from txviz.bench.capture import text_of
from txviz.block.recording import STAGES, run_text
from txviz.core import capture, stages
from txviz.core.capture import prepared
from txviz.core.layouts import layout_of


def timed_pair(first, second, repeats: int) -> tuple[dict, dict]:
    """Median and best wall and CPU seconds of two functions, run alternately so drifting load hits both.

    On a busy shared machine contention only ever adds time, so the best run is reported too.
    """
    first(), second()  # warm-up
    samples = [{"wall": [], "cpu": []}, {"wall": [], "cpu": []}]
    for _ in range(repeats):
        for index, fn in enumerate((first, second)):
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            samples[index]["wall"].append(time.perf_counter() - wall)
            samples[index]["cpu"].append(time.process_time() - cpu)
    return tuple(
        {k: statistics.median(v) for k, v in s.items()} | {f"best_{k}": min(v) for k, v in s.items()}
        for s in samples
    )


def idle_hook_cost(loaded, ids: torch.Tensor, repeats: int) -> tuple[dict, dict]:
    """Median wall and CPU seconds of a plain forward without hooks and with the idle hooks, interleaved."""
    model = loaded.model
    points = layout_of(model).points(model)
    samples = {False: {"wall": [], "cpu": []}, True: {"wall": [], "cpu": []}}
    for _ in range(repeats + 1):
        for hooked in (False, True):
            stages.uninstall(model)
            if hooked:
                stages.install(model, points, capture._active)
            wall, cpu = time.perf_counter(), time.process_time()
            with torch.no_grad():
                model(input_ids=ids)
            samples[hooked]["wall"].append(time.perf_counter() - wall)
            samples[hooked]["cpu"].append(time.process_time() - cpu)
    stages.install(model, points, capture._active)
    # the first round is a warm-up
    return tuple({k: statistics.median(v[1:]) for k, v in samples[h].items()} for h in (False, True))


def hook_call_cost(calls: int = 20_000, rounds: int = 5) -> float:
    """CPU seconds one idle stage hook adds to one module call (a ContextVar read and PyTorch's hook path).

    Measured on a module that does nothing, so the busy machine's noise on a real forward cannot hide it;
    the best of interleaved rounds, since contention only ever adds time.
    """
    module, x = torch.nn.Identity(), torch.zeros(1)
    best = {False: float("inf"), True: float("inf")}
    for _ in range(rounds):
        for hooked in (False, True):
            handle = (
                module.register_forward_hook(stages._hook_for("bench.0.ffn", capture._active))
                if hooked
                else None
            )
            start = time.process_time()
            for _ in range(calls):
                module(x)
            best[hooked] = min(best[hooked], (time.process_time() - start) / calls)
            if handle is not None:
                handle.remove()
    return max(best[True] - best[False], 0.0)


def measure(name: str, n_tokens: int, repeats: int) -> dict:
    loaded = models.load(name, "cpu")
    prepared(loaded.model)
    text = text_of(loaded, n_tokens)
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])

    def plain():
        with torch.no_grad():
            loaded.model(input_ids=ids)

    base, recorded = timed_pair(plain, lambda: run_text(loaded, text, STAGES), repeats)
    plain_again, first_view = timed_pair(plain, lambda: run_text(loaded, text), repeats)
    unhooked, hooked = idle_hook_cost(loaded, ids, repeats)
    return {
        "model": name,
        "tokens": ids.shape[1],
        "plain": base,
        "recorded": recorded,
        "first_view": first_view,
        "plain_again": plain_again,
        "unhooked": unhooked,
        "hooked": hooked,
        "n_hooks": len(stages.installed(loaded.model)),
    }


def _ratio(a: dict, b: dict, what: str) -> str:
    return f"{a[what] / b[what]:.2f}x"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench block", description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    torch.set_grad_enabled(False)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch threads: {torch.get_num_threads()}; load average at start: {os.getloadavg()[0]:.1f}\n")
    rows = [measure(name, n, args.repeats) for name, n in (("minilm", 128), ("smollm2", 256))]
    print("## block: every stage of every block recorded (run_text, stages attn+ffn+cross, hidden states,")
    print("## FFN activations) vs a plain forward (SDPA, nothing recorded); medians, interleaved\n")
    print(
        "| model | tokens | plain forward | all stages | wall ratio (goal <= 1.5) | CPU ratio "
        "| best-run wall ratio | best-run CPU ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['tokens']} | {r['plain']['wall'] * 1e3:.1f} ms | "
            f"{r['recorded']['wall'] * 1e3:.1f} ms | {_ratio(r['recorded'], r['plain'], 'wall')} | "
            f"{_ratio(r['recorded'], r['plain'], 'cpu')} | {_ratio(r['recorded'], r['plain'], 'best_wall')} | "
            f"{_ratio(r['recorded'], r['plain'], 'best_cpu')} |"
        )
    print("\n## the page's first view (hidden states only, no stages) vs a plain forward\n")
    print("| model | first view | wall ratio | CPU ratio | best-run wall ratio | best-run CPU ratio |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        v, p = r["first_view"], r["plain_again"]
        print(
            f"| {r['model']} | {v['wall'] * 1e3:.1f} ms | {_ratio(v, p, 'wall')} | {_ratio(v, p, 'cpu')} | "
            f"{_ratio(v, p, 'best_wall')} | {_ratio(v, p, 'best_cpu')} |"
        )
    print("\n## idle stage hooks: a plain forward with them vs without them (what every other page pays)\n")
    print("| model | without hooks | with idle hooks | wall ratio | CPU ratio |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['unhooked']['wall'] * 1e3:.1f} ms | {r['hooked']['wall'] * 1e3:.1f} ms | "
            f"{_ratio(r['hooked'], r['unhooked'], 'wall')} | {_ratio(r['hooked'], r['unhooked'], 'cpu')} |"
        )
    per_call = hook_call_cost()
    print(
        f"\nOne idle hook adds {per_call * 1e6:.2f} µs of CPU to a module call (best of 5 x 20,000 calls).\n"
    )
    print("| model | hooked modules | added per forward | plain forward CPU | ratio, idle hooks / none |")
    print("|---|---|---|---|---|")
    for r in rows:
        added = per_call * r["n_hooks"]
        print(
            f"| {r['model']} | {r['n_hooks']} | {added * 1e3:.3f} ms | {r['plain']['cpu'] * 1e3:.1f} ms | "
            f"{1 + added / r['plain']['cpu']:.4f}x |"
        )
    worst = max(r["recorded"]["cpu"] / r["plain"]["cpu"] for r in rows)
    return 0 if worst < 3 else 1
