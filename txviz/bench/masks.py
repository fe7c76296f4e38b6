"""Dense masked SDPA vs block-sparse FlexAttention: time and peak memory per mask pattern.

python -m txviz bench masks                 # 1,024, 4,096 and 8,192 tokens
python -m txviz bench masks --quick         # 256, 512 and 1,024 tokens
python -m txviz bench masks --sizes 256 512 --json out.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from txviz.bench.measure import Measurement, measure, track_large_allocations
from txviz.core import paths
from txviz.core.threads import torch_threads
from txviz.masks import patterns as masks
from txviz.masks import sparse as sa

SIZES = (1024, 4096, 8192)
QUICK_SIZES = (256, 512, 1024)
PAGE_SIZES = (256, 512, 1024, 2048)  # the page's live run: well under a minute after compiling
WINDOW = 128  # keys each side for the windowed patterns: O(n w) pairs
N_HEADS, D_HEAD = 4, 64
SAVED = paths.ASSETS / "bench" / "masks.json"


@dataclass(frozen=True)
class BenchPattern:
    """A pattern as benchmarked: a label, its mask for n tokens, and its w in O(n w)."""

    key: str
    label: str
    build: Callable[[int], np.ndarray]  # n -> bool (n, n)
    keys_per_query: Callable[[int], float]  # the w of O(n w), for the reference curve


# Long-sequence settings: windows and blocks of 128 tokens, the kernel's tile size.
BENCH_PATTERNS: tuple[BenchPattern, ...] = (
    BenchPattern("causal", "Causal", masks.causal_mask, lambda n: n / 2),
    BenchPattern(
        "local",
        f"Local window ±{WINDOW}",
        lambda n: masks.local_window_mask(n, WINDOW),
        lambda n: 2 * WINDOW + 1,
    ),
    BenchPattern(
        "local_causal",
        f"Causal window {WINDOW}",
        lambda n: masks.local_window_mask(n, WINDOW, causal=True),
        lambda n: WINDOW + 1,
    ),
    BenchPattern(
        "dilated",
        f"Dilated rate 2, ±{WINDOW // 2} taps",
        lambda n: masks.dilated_mask(n, WINDOW // 2, 2),
        lambda n: WINDOW + 1,
    ),
    BenchPattern(
        "strided",
        f"Strided {WINDOW}",
        lambda n: masks.strided_mask(n, WINDOW),
        lambda n: WINDOW + n / (2 * WINDOW),
    ),
    BenchPattern(
        "block",
        f"Block-local, blocks of {WINDOW}",
        lambda n: masks.block_local_mask(n, max(1, n // WINDOW)),
        lambda n: WINDOW,
    ),
    BenchPattern(
        "global",
        f"Longformer: 16 global + ±{WINDOW}",
        lambda n: masks.global_tokens_mask(n, 16, WINDOW),
        lambda n: 2 * WINDOW + 1 + 32,
    ),
    BenchPattern(
        "bigbird",
        f"BigBird: ±{WINDOW} + 16 global + 2 random blocks",
        lambda n: masks.bigbird_mask(n, WINDOW, 16, 2, seed=0, block=WINDOW),
        lambda n: 4 * WINDOW + 1 + 32,
    ),
)


@dataclass(frozen=True)
class Row:
    """One pattern at one length: both kernels' best time and peak added memory."""

    pattern: str
    label: str
    n: int
    fraction_kept: float  # of (query, key) pairs
    tiles_computed: float  # of 128 x 128 tiles the sparse kernel visits
    dense_s: float  # CPU seconds (steady on a shared machine); wall seconds below
    sparse_s: float
    dense_wall_s: float
    sparse_wall_s: float
    dense_bytes: int | None
    sparse_bytes: int | None
    max_abs_difference: float  # between the two outputs

    @property
    def speedup(self) -> float:
        return self.dense_s / self.sparse_s

    @property
    def wall_speedup(self) -> float:
        return self.dense_wall_s / self.sparse_wall_s

    @property
    def memory_ratio(self) -> float | None:
        if not self.dense_bytes or not self.sparse_bytes:
            return None
        return self.dense_bytes / self.sparse_bytes


def compile_kernel(n: int = 2 * sa.BLOCK_SIZE) -> float:
    """Compile FlexAttention for n tokens (seconds each length on CPU); returns the seconds taken."""
    start = time.perf_counter()
    q, k, v = sa.random_qkv(n, N_HEADS, D_HEAD)
    with torch.no_grad():  # the same grad mode as the measurements, or they would recompile
        sa.sparse_attention(q, k, v, sa.block_mask_from_dense(masks.causal_mask(n)))
    return time.perf_counter() - start


def default_repeats(n: int) -> int:
    """Short runs are noisy and cheap to repeat; at 8,192 tokens one dense call takes seconds."""
    return 3 if n <= 2048 else 1


def measure_pattern(pattern: BenchPattern, n: int, repeats: int | None = None) -> Row:
    """Time and peak memory of dense and sparse attention for one pattern at n tokens."""
    repeats = repeats or default_repeats(n)
    fixed = masks.ensure_attendable(pattern.build(n))
    mask = sa.as_bool_tensor(fixed.mask)  # (n, n)
    block_mask = sa.block_mask_from_dense(mask)
    q, k, v = sa.random_qkv(n, N_HEADS, D_HEAD)
    outputs = {}

    def run(name: str, fn: Callable[[], torch.Tensor]) -> Measurement:
        return measure(lambda: outputs.__setitem__(name, fn()), repeats)

    # Both on one thread, the sparse kernel's only setting, so the comparison is like for like.
    with torch.no_grad(), torch_threads(1):
        dense = run("dense", lambda: sa.dense_attention(q, k, v, mask))
        sparse = run("sparse", lambda: sa.sparse_attention(q, k, v, block_mask))
    return Row(
        pattern=pattern.key,
        label=pattern.label,
        n=n,
        fraction_kept=masks.fraction_kept(fixed.mask),
        tiles_computed=sa.tiles_computed(block_mask),
        dense_s=dense.cpu_seconds,
        sparse_s=sparse.cpu_seconds,
        dense_wall_s=dense.seconds,
        sparse_wall_s=sparse.seconds,
        dense_bytes=dense.peak_bytes,
        sparse_bytes=sparse.peak_bytes,
        max_abs_difference=float((outputs["dense"] - outputs["sparse"]).abs().max()),
    )


def run_benchmark(
    sizes: Iterable[int],
    patterns: Iterable[BenchPattern] = BENCH_PATTERNS,
    repeats: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[Row]:
    """Every pattern at every size; progress(done, total, message) after each measurement."""
    sizes, patterns = list(sizes), list(patterns)
    for n in sizes:
        if n < 1 or n % sa.BLOCK_SIZE:
            raise ValueError(f"Sizes must be positive multiples of {sa.BLOCK_SIZE}, got {n}.")
    total, rows = len(sizes) * len(patterns), []
    for n in sizes:
        if progress:
            progress(len(rows), total, f"Compiling the sparse kernel for {n:,} tokens")
        compile_kernel(n)  # untimed: the kernel is compiled once per length
        for pattern in patterns:
            rows.append(measure_pattern(pattern, n, repeats))
            if progress:
                progress(len(rows), total, f"{pattern.label} at {n:,} tokens")
    return rows


def to_json(rows: list[Row], compile_s: float, threads: int) -> dict:
    """Rows and the conditions they were measured under, for saving and plotting later."""
    return {
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "threads": threads,
        "n_heads": N_HEADS,
        "d_head": D_HEAD,
        "block_size": sa.BLOCK_SIZE,
        "compile_s": compile_s,
        "rows": [asdict(r) for r in rows],
    }


def load_saved(path: Path = SAVED) -> dict | None:
    """A saved benchmark run, or None when there is none."""
    return json.loads(path.read_text()) if path.exists() else None


def saved_rows(pattern: str, saved: dict | None) -> list[Row]:
    """The rows of one pattern from a saved run, smallest n first."""
    rows = [Row(**r) for r in (saved or {}).get("rows", []) if r["pattern"] == pattern]
    return sorted(rows, key=lambda r: r.n)


def summary_rows(rows: list[Row]) -> list[dict[str, str]]:
    """Rows as a short table for the page."""
    return [
        {
            "n": f"{r.n:,}",
            "pairs kept": f"{r.fraction_kept:.1%}",
            "tiles computed": f"{r.tiles_computed:.1%}",
            "dense (CPU s)": f"{r.dense_s:.3f}",
            "sparse (CPU s)": f"{r.sparse_s:.3f}",
            "speed-up": f"{r.speedup:.2f}×",
            "memory ratio": "n/a" if r.memory_ratio is None else f"{r.memory_ratio:.1f}×",
        }
        for r in rows
    ]


def _mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:7.1f}"


def format_table(rows: list[Row]) -> str:
    """Rows as a fixed-width table with the ratios."""
    lines = [
        f"{'pattern':<44}{'n':>6}{'kept':>7}{'tiles':>7}{'dense s':>9}{'sparse s':>9}"
        f"{'speedup':>9}{'(wall)':>8}{'dense MiB':>10}{'sparse MiB':>11}{'mem ratio':>10}{'max diff':>10}"
    ]
    for r in rows:
        ratio = "n/a" if r.memory_ratio is None else f"{r.memory_ratio:.2f}x"
        lines.append(
            f"{r.label:<44}{r.n:>6}{r.fraction_kept:>7.1%}{r.tiles_computed:>7.1%}"
            f"{r.dense_s:>9.3f}{r.sparse_s:>9.3f}{r.speedup:>8.2f}x{r.wall_speedup:>7.2f}x"
            f"{_mib(r.dense_bytes):>10}"
            f"{_mib(r.sparse_bytes):>11}{ratio:>10}{r.max_abs_difference:>10.1e}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench masks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--sizes", type=int, nargs="+", help="sequence lengths (multiples of 128)")
    parser.add_argument("--patterns", nargs="+", choices=[p.key for p in BENCH_PATTERNS])
    parser.add_argument(
        "--repeats", type=int, help="best of this many calls (default 3 up to 2,048 tokens, then 1)"
    )
    parser.add_argument("--json", type=Path, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)

    track_large_allocations()
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    patterns = [p for p in BENCH_PATTERNS if not args.patterns or p.key in args.patterns]
    print(
        f"Dense masked SDPA vs FlexAttention with a block mask ({sa.BLOCK_SIZE}-token tiles), "
        f"{N_HEADS} heads x d_head {D_HEAD}, float32, one CPU thread, "
        f"torch {torch.__version__}.",
        flush=True,
    )
    started = time.perf_counter()
    compile_s = compile_kernel()
    print(f"Compiled FlexAttention for 256 tokens in {compile_s:.1f} s (once per length).", flush=True)
    try:
        rows = run_benchmark(
            sizes,
            patterns,
            args.repeats,
            progress=lambda done, total, what: print(f"  [{done}/{total}] {what}", flush=True),
        )
    except ValueError as error:
        print(f"error: {error}")
        return 2
    print(format_table(rows))
    print(f"Total {time.perf_counter() - started:.0f} s wall, {time.process_time():.0f} s CPU.")
    print(
        "Times are CPU seconds of this process (wall-clock speedup in brackets: it suffers when "
        "other programs share the cores).\n"
        "speedup = dense time / sparse time; mem ratio = dense peak / sparse peak (memory added "
        "during the call, read from the process's peak RSS); tiles = share of tiles computed."
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(to_json(rows, compile_s, threads=1), indent=1))
        print(f"Wrote {args.json}")
    return 0
