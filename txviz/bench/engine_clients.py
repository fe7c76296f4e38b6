"""Lightweight in-process clients for `bench load --clients inprocess`: many sessions, one engine.

Each client is a thread that generates through the same GenerationEngine the app shares between
browser sessions, with its own prompt and seed. It reaches 30 sessions on a 2-core machine where
30 Chromium contexts would measure the browsers instead of the server. Leaks are checked exactly:
every client's greedy tokens must equal a lone run of its own prompt, and its attention rows must
cover its own sequence and nothing more.

The physical reference is measured in the same run: transformers' own `generate` on the same
prompts, first one prompt alone, then all of them left-padded in one batch, with nothing recorded.
"""

from __future__ import annotations

import copy
import logging
import statistics
import threading
import time

import torch

from txviz.bench.measure import track_large_allocations
from txviz.generation.batching import GenerationEngine
from txviz.generation.loop import GenerationRequest, generate, prepare
from txviz.generation.sampling import SamplingSettings

log = logging.getLogger(__name__)

SUBJECTS = [
    "apple", "river", "tiger", "piano", "castle", "winter", "doctor", "garden", "engine", "forest",
    "silver", "bridge", "rabbit", "ocean", "pencil", "desert", "violin", "harbor", "candle", "meadow",
    "comet", "lantern", "glacier", "falcon", "teacup", "volcano", "compass", "orchard", "marble", "thunder",
]  # fmt: skip


def request_for(index: int, new_tokens: int) -> GenerationRequest:
    """Client index's own prompt: greedy, so a lone run gives the exact tokens to expect."""
    prompt = f"Write one sentence about a {SUBJECTS[index % len(SUBJECTS)]}."
    return GenerationRequest(prompt, new_tokens, SamplingSettings(0.0), stop_at_eos=False)


def run_clients(loaded, n: int, new_tokens: int, max_batch: int) -> dict:
    """n clients at once through one engine: wall time of each, errors, leaks, the largest batch."""
    engine = GenerationEngine(loaded, max_batch=max_batch)
    times, errors, results = [0.0] * n, [], [None] * n
    start_gate = threading.Barrier(n)

    def client(i: int) -> None:
        request = request_for(i, new_tokens)
        start_gate.wait()
        began = time.perf_counter()
        try:
            results[i] = list(engine.submit(request, owner=f"client-{i}").steps())
        except Exception as error:  # noqa: BLE001 - every failure is a result of the benchmark
            log.debug("client %d failed", i, exc_info=True)  # the report keeps one line; this, the traceback
            errors.append(f"client {i}: {type(error).__name__} {error}"[:200])
        times[i] = time.perf_counter() - began

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    engine.close()
    return {"times": times, "errors": errors, "results": results, "largest_batch": engine.largest_batch}


def leaks(loaded, results: list, new_tokens: int) -> list[str]:
    """Clients whose tokens differ from their lone run, or whose rows are not their own length."""
    found = []
    for i, steps in enumerate(results):
        if steps is None:
            continue
        alone = list(generate(loaded, request_for(i, new_tokens)))
        if [s.token_id for s in steps] != [s.token_id for s in alone]:
            found.append(f"client {i}: its tokens differ from its lone run")
        if any(s.attention.shape != a.attention.shape for s, a in zip(steps, alone, strict=False)):
            found.append(f"client {i}: its attention rows are not its own sequence's length")
    return found


def reference_generate(loaded, indices: list[int], new_tokens: int) -> float:
    """Seconds for transformers' greedy `generate` on these clients' prompts, left-padded in one batch."""
    ids = [prepare(loaded, request_for(i, new_tokens)).ids for i in indices]
    width = max(len(row) for row in ids)
    pad = loaded.tokenizer.pad_token_id
    pad = loaded.tokenizer.eos_token_id if pad is None else pad
    input_ids = torch.tensor([[pad] * (width - len(row)) + list(row) for row in ids])
    mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in ids])
    config = copy.deepcopy(loaded.model.generation_config)
    config.do_sample, config.max_new_tokens, config.min_new_tokens = False, new_tokens, new_tokens
    config.eos_token_id, config.pad_token_id = None, pad  # always new_tokens tokens, as the clients ask
    began = time.perf_counter()
    with torch.no_grad():
        loaded.model.generate(input_ids.to(loaded.device), attention_mask=mask.to(loaded.device),
                              generation_config=config)  # fmt: skip
    return time.perf_counter() - began


def timed(measure) -> tuple[float, float]:
    """(wall seconds measure() reports, CPU seconds of this whole process meanwhile)."""
    cpu = time.process_time()
    wall = measure()
    return wall, time.process_time() - cpu


def compare_rounds(loaded, n: int, new_tokens: int, max_batch: int, rounds: int = 3) -> dict:
    """Engine lone and under load, generate alone and batched, interleaved round by round so a busy
    moment of a shared machine hits all four alike; medians of (wall, CPU) seconds per measure."""
    measures = {
        "engine lone": lambda: max(run_clients(loaded, 1, new_tokens, max_batch)["times"]),
        "engine under load": lambda: max(run_clients(loaded, n, new_tokens, max_batch)["times"]),
        "generate alone": lambda: reference_generate(loaded, [0], new_tokens),
        "generate batch": lambda: reference_generate(loaded, list(range(n)), new_tokens),
    }
    got = {name: [] for name in measures}
    for _ in range(rounds):
        for name, measure in measures.items():
            got[name].append(timed(measure))
    return {
        name: (statistics.median(w for w, _ in pairs), statistics.median(c for _, c in pairs))
        for name, pairs in got.items()
    }


def main_inprocess(model: str, sessions: int, new_tokens: int, max_batch: int, threads: int = 1) -> int:
    """Clients through one engine (tokens checked against lone runs), then the engine against
    transformers' `generate` on the same prompts; prints the ratio line last."""
    import os

    import psutil

    from txviz import models

    if threads:
        torch.set_num_threads(threads)
    track_large_allocations()
    loaded = models.load(model)
    run_clients(loaded, 1, 2, max_batch)  # warm-up
    reference_generate(loaded, [0], 2)
    n = min(8, sessions)
    medians = compare_rounds(loaded, n, new_tokens, max_batch)
    lone = medians["engine lone"][0]
    rows = []
    for clients in sorted({1, n, sessions}):
        out = run_clients(loaded, clients, new_tokens, max_batch)
        found = leaks(loaded, out["results"], new_tokens)
        rows.append((clients, out, found, max(out["times"]), psutil.Process().memory_info().rss))
    print(f"## load: in-process clients through one generation engine ({model}, {new_tokens} new tokens)\n")
    print("| clients | largest batch | median generation | slowest generation | slowest / lone | errors | leaks "
          "| process memory |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for clients, out, found, slowest, rss in rows:
        print(
            f"| {clients} | {out['largest_batch']} | {statistics.median(out['times']):.1f} s | {slowest:.1f} s | "
            f"{slowest / lone:.2f}x | {len(out['errors'])} | {len(found) or 'none'} | {rss / 1e9:.2f} GB |"
        )
    for clients, out, found, _, _ in rows:
        for line in out["errors"] + found:
            print(f"- {clients} clients: {line}")
    print(f"\n{n} prompts, {new_tokens} new tokens, torch threads: {torch.get_num_threads()}, "
          f"load average at the end: {os.getloadavg()[0]:.2f}; medians of 3 interleaved rounds:")  # fmt: skip
    for name, (wall, cpu) in medians.items():
        print(f"- {name}: {wall:.2f} s wall, {cpu:.2f} s CPU")
    engine, engine_lone = medians["engine under load"], medians["engine lone"]
    batch, alone = medians["generate batch"], medians["generate alone"]
    print(f"CPU time: engine / generate = {engine[1] / batch[1]:.2f}x")
    print(
        f"engine slowest-under-load / lone = {engine[0] / engine_lone[0]:.2f}x; "
        f"generate batch / alone = {batch[0] / alone[0]:.2f}x; engine / generate = {engine[0] / batch[0]:.2f}x"
    )
    return 1 if any(out["errors"] or found for _, out, found, _, _ in rows) else 0
