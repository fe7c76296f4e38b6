"""Head Atlas: SmolLM2 over Python's documentation in windows of 256, the build against plain forwards over
the same windows in the same run; peak memory, size on disk and the time to open the stored atlas.

The plain forward is the model alone (SDPA, the last position's logits only) on the same batches.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from txviz.bench import measure

MODEL = "smollm2"


def _peak_bytes() -> int:
    """Peak resident bytes since the last reset (VmHWM), else since the process started."""
    try:
        return measure._read_rss()[1]
    except (OSError, AttributeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def _first_tokens(loaded, n_tokens: int):
    """Python's documentation cut to its first ``n_tokens`` tokens, as a corpus."""
    from txviz.atlas.corpus import of_text, python_docs

    docs = python_docs()
    ids = loaded.tokenizer(docs.text, add_special_tokens=False, verbose=False)["input_ids"]
    if n_tokens >= len(ids):
        return docs
    return of_text(f"{docs.name}, first {n_tokens:,} tokens", loaded.tokenizer.decode(ids[:n_tokens]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench atlas", description=__doc__)
    parser.add_argument(
        "--tokens", type=int, default=100_000, help="corpus tokens (the goal is stated at 100,000)"
    )
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0 keeps torch's default)")
    args = parser.parse_args(argv)
    from txviz import models
    from txviz.atlas import build as builder
    from txviz.atlas import store
    from txviz.atlas.atlas import Settings

    measure.track_large_allocations()  # freed blocks go back to the OS: the peak is what the build holds
    torch.set_grad_enabled(False)
    if args.threads:
        torch.set_num_threads(args.threads)
    loaded = models.load(MODEL, "cpu")
    settings = Settings(window=args.window)
    corpus = _first_tokens(loaded, args.tokens)
    cut = builder.windows(loaded, corpus, settings)
    lengths = cut.lengths
    batches = [
        np.arange(i, min(i + settings.batch, len(lengths))) for i in range(0, len(lengths), settings.batch)
    ]
    batches = [part for b in batches for part in np.split(b, np.flatnonzero(np.diff(lengths[b])) + 1)]

    def plain() -> None:
        for index in batches:
            ids = torch.from_numpy(cut.ids[index, : lengths[index[0]]]).long()
            loaded.model(input_ids=ids, logits_to_keep=1)

    print(
        f"## Head Atlas: {MODEL} over {int(lengths.sum()):,} tokens in {len(lengths)} windows of {args.window}\n"
    )
    print(
        f"{os.cpu_count()} CPUs, torch threads {args.threads or torch.get_num_threads()}; load average before: "
        f"{os.getloadavg()}; medians of {args.repeats}\n"
    )
    loaded_peak = _peak_bytes()
    reset = measure._reset_peak()  # loading converts the weights once: its peak is not the build's
    times: dict[str, list[float]] = {"plain": [], "build": [], "plain_cpu": [], "build_cpu": []}
    atlas = None
    for _ in range(args.repeats):  # alternated, so drifting load hits both alike
        start, cpu = time.perf_counter(), time.process_time()
        plain()
        times["plain"].append(time.perf_counter() - start)
        times["plain_cpu"].append(time.process_time() - cpu)  # steadier than wall on a busy machine
        start, cpu = time.perf_counter(), time.process_time()
        atlas = builder.build(loaded, corpus, settings)
        times["build"].append(time.perf_counter() - start)
        times["build_cpu"].append(time.process_time() - cpu)
    peak = _peak_bytes()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["TXVIZ_ATLAS_DIR"] = folder
        stored = store.save(atlas)
        size = sum(p.stat().st_size for p in Path(stored).iterdir())
        opening = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            store.load(stored)
            opening.append(time.perf_counter() - start)
    median = {k: statistics.median(v) for k, v in times.items()}
    ratio = median["build"] / median["plain"]
    print("| measure | value | goal |")
    print("|---|---|---|")
    print(f"| plain forwards | {median['plain']:.1f} s | |")
    print(f"| atlas build | {median['build']:.1f} s | |")
    print(f"| build ratio | {ratio:.2f}x | <= 1.5x |")
    print(f"| build ratio, CPU time | {median['build_cpu'] / median['plain_cpu']:.2f}x | |")
    each = ", ".join(f"{b / p:.2f}x" for b, p in zip(times["build"], times["plain"], strict=True))
    print(f"| each repeat's ratio | {each} | |")
    since = "since the model was loaded" if reset else "of the whole process, loading included"
    print(f"| peak resident memory ({since}) | {peak / 1e9:.2f} GB | < 2.5 GB |")
    print(f"| peak resident memory while loading | {loaded_peak / 1e9:.2f} GB | |")
    print(f"| size on disk | {size / 1e6:.1f} MB | < 50 MB |")
    print(f"| open the stored atlas | {statistics.median(opening) * 1000:.0f} ms | < 1 s |")
    print(f"\nload average after: {os.getloadavg()}")
    print(f"\natlas build ratio to plain forwards over the same windows: {ratio:.2f}x (goal <= 1.5x)")
    return 0
