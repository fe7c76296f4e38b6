"""`python -m txviz bench scale`: a user's 0.5-1B model on this CPU, built at random from its public config.

The folder is written here (config, random weights, SmolLM2's tokenizer: no download) and loaded
through the registry as a user's folder. Each precision is measured in a fresh process, so the
resident memory and its peak are that process's own: load time, resident memory, the Explorer's
first trace at 256 tokens (``trace_text``, every layer and head recorded) against a plain forward
at the same length, and then medians of 3 of each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

# Public config values (config.json of Qwen/Qwen2.5-0.5B and meta-llama/Llama-3.2-1B); weights random.
CONFIGS = {
    "qwen2.5-0.5b-like": (
        "Qwen2Config",
        "Qwen2ForCausalLM",
        dict(
            hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
            intermediate_size=4864, vocab_size=151936, tie_word_embeddings=True,
            max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6,
        ),
    ),
    "llama-3.2-1b-like": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(
            hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
            intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True,
            max_position_embeddings=131072, rope_theta=5e5, rms_norm_eps=1e-5,
        ),
    ),
}  # fmt: skip
TOKENS = 256
REPEATS = 3


def build_folder(name: str, folder: Path, tokenizer, sizes: dict | None = None) -> Path:
    """Write a random model of config ``name`` (or ``sizes`` over it) with ``tokenizer`` to ``folder``."""
    import transformers as tf

    config_class, model_class, public = CONFIGS[name]
    config = getattr(tf, config_class)(**{**public, **(sizes or {})}, architectures=[model_class])
    torch.manual_seed(0)
    model = getattr(tf, model_class)(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    return folder


def smollm2_tokenizer():
    """SmolLM2's tokenizer (from the packaged model, converted once): a real BPE, no download."""
    import transformers as tf

    from txviz.models.registry import smollm2_folder

    return tf.AutoTokenizer.from_pretrained(smollm2_folder())


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def _timed(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of fn(); CPU time is the steadier measure on a shared machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(folder: str, dtype: str, n_tokens: int = TOKENS, repeats: int = REPEATS) -> dict:
    """In this process: load ``folder`` in ``dtype``, then time the first trace and plain forwards."""
    from txviz import models
    from txviz.bench.capture import text_of
    from txviz.bench.measure import _read_rss, _reset_peak
    from txviz.core.tracing import trace_bytes, trace_text

    torch.set_grad_enabled(False)
    loaded = None

    def load() -> None:
        nonlocal loaded
        loaded = models.load(folder, "cpu", dtype=dtype)

    load_s, load_cpu = _timed(load)
    loaded_rss, load_peak = _rss(), _peak()
    text = text_of(loaded, n_tokens)
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])

    def plain() -> None:
        loaded.model(input_ids=ids)

    def traced() -> None:
        trace_text(loaded, text)

    can_reset = _reset_peak()  # from here the kernel's peak is the trace's own
    first = _timed(traced)  # what a user waits for on opening the Explorer: nothing warmed up before it
    trace_peak = _read_rss()[1] if can_reset else None
    plains, traces = [], []
    for _ in range(repeats):  # alternately, so a busy moment on the shared machine hurts both
        plains.append(_timed(plain))
        traces.append(_timed(traced))
    return {
        "dtype": dtype,
        "tokens": ids.shape[1],
        "parameters": sum(p.numel() for p in loaded.model.parameters()),
        "load_s": load_s,
        "load_cpu": load_cpu,
        "rss_loaded": loaded_rss,
        "peak_load": load_peak,
        "peak_trace": trace_peak,
        "trace_mb": trace_bytes(loaded, ids.shape[1]) / 2**20,
        "first_trace": first,
        "plain": [statistics.median(t[i] for t in plains) for i in (0, 1)],
        "trace": [statistics.median(t[i] for t in traces) for i in (0, 1)],
        "threads": torch.get_num_threads(),
        "check_gap": loaded.check_gap,
    }


def measure_apart(folder: Path, dtype: str, threads: int, n_tokens: int = TOKENS) -> dict:
    """``measure`` in a fresh Python process: its memory is the model's alone, not this builder's."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    code = (
        "import json, sys, torch; from txviz.bench.scale import measure; "
        f"torch.set_num_threads({threads}); "
        f"print('RESULT ' + json.dumps(measure(sys.argv[1], sys.argv[2], {int(n_tokens)})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder), dtype], capture_output=True, text=True, env=env, check=False
    )
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line.removeprefix("RESULT "))
    raise RuntimeError(f"the measuring process failed:\n{done.stderr[-3000:]}")


def uptime() -> str:
    """The machine's load averages (it is shared: wall times stretch with them)."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def table(name: str, results: list[dict]) -> list[str]:
    gb = 2**30
    lines = [
        f"## {name}: {results[0]['parameters'] / 1e6:,.0f}M parameters, {results[0]['tokens']} tokens, "
        f"{results[0]['threads']} torch threads; times wall / CPU, medians of {REPEATS}\n",
        "| model | precision | load s | RSS loaded | peak RSS (load) | peak RSS (first trace) | trace held | first trace "
        "| plain forward | trace | first trace / forward ratio (CPU) | trace / forward ratio (CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        (fw, fc), (pw, pc), (tw, tc) = r["first_trace"], r["plain"], r["trace"]
        peak = "-" if r["peak_trace"] is None else f"{r['peak_trace'] / gb:.2f} GB"
        lines.append(
            f"| {name} | {r['dtype']} | {r['load_s']:.1f} / {r['load_cpu']:.1f} | {r['rss_loaded'] / gb:.2f} GB "
            f"| {r['peak_load'] / gb:.2f} GB | {peak} | {r['trace_mb']:.0f} MB | {fw:.1f} / {fc:.1f} s "
            f"| {pw:.1f} / {pc:.1f} s | {tw:.1f} / {tc:.1f} s | {fc / pc:.2f}x | {tc / pc:.2f}x |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench scale", description=__doc__)
    parser.add_argument("--models", nargs="+", choices=list(CONFIGS), default=["qwen2.5-0.5b-like"])
    parser.add_argument(
        "--dtypes", nargs="+", choices=["float32", "bfloat16"], default=["float32", "bfloat16"]
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of the measuring process (1: steady when shared)",
    )
    args = parser.parse_args(argv)
    print(f"machine load before: {uptime()}")
    tokenizer = smollm2_tokenizer()
    for name in args.models:
        root = Path(tempfile.mkdtemp(prefix="txviz-scale-"))
        try:
            start = time.perf_counter()
            folder = build_folder(name, root / name, tokenizer)
            print(
                f"{name}: built and saved in {time.perf_counter() - start:.0f} s (random weights, no download)"
            )
            results = [measure_apart(folder, dtype, args.threads) for dtype in args.dtypes]
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print("\n".join(["", *table(name, results), ""]))
        gaps = ", ".join(f"{r['dtype']} {r['check_gap']:.1e}" for r in results)
        print(f"self-check at load (float32 in every case): largest logit gap {gaps}")
    print(
        "RSS loaded: the measuring process after the load (Python, torch and the model); peaks are the "
        "process's own. A reduced precision loads in float32 for the self-check first, so its load peak "
        "is float32's."
    )
    print(f"machine load after: {uptime()}")
    return 0
