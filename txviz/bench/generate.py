"""Throughput of the page's generation loop against plain `model.generate`, and its memory."""

from __future__ import annotations

import argparse
import copy
import time

import torch

from txviz.generation.loop import GenerationRequest, attention_bytes, generate, prepare
from txviz.models import PRECISIONS, load

PROMPT = "The history of the printing press begins"
GOAL = 0.85


Timing = tuple[float, float]  # (wall seconds, CPU seconds of this process)


def _clock() -> Timing:
    return time.perf_counter(), time.process_time()


def _since(start: Timing) -> Timing:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def plain_generate(model, input_ids: torch.Tensor, n_new: int) -> tuple[list[int], Timing]:
    """Greedy `model.generate` with nothing recorded (fast SDPA path); (tokens, timing)."""
    config = copy.deepcopy(model.generation_config)
    config.eos_token_id = None  # always n_new tokens, as the loop below makes
    config.do_sample, config.max_new_tokens = False, n_new
    start = _clock()
    with torch.no_grad():
        out = model.generate(input_ids, generation_config=config)
    return out[0, input_ids.shape[1] :].tolist(), _since(start)


def recorded_loop(loaded, request: GenerationRequest) -> tuple[list[int], Timing]:
    """The page's loop recording the newest attention row of every layer and head."""
    start = _clock()
    steps = list(generate(loaded, request))
    return [s.token_id for s in steps], _since(start)


def compare(loaded, args) -> tuple[float, float, str]:
    """Print both ways' tokens/s on the model's device; (wall ratio, CPU ratio, same greedy tokens?)."""
    request = GenerationRequest(args.prompt, max_new_tokens=args.tokens, stop_at_eos=False)
    prompt = prepare(loaded, request)
    input_ids = torch.tensor([prompt.ids], device=loaded.device)
    print(
        f"{loaded.name} on {loaded.device} in {loaded.dtype}, {torch.get_num_threads()} threads, "
        f"prompt {len(prompt)} tokens"
    )

    # warm-up: first calls allocate and pick kernels
    plain_generate(loaded.model, input_ids, 4)
    recorded_loop(loaded, GenerationRequest(args.prompt, max_new_tokens=4))

    plain_times, loop_times = [], []
    for _ in range(args.repeats):  # interleaved, so a busy moment hurts both alike
        plain_tokens, timing = plain_generate(loaded.model, input_ids, args.tokens)
        plain_times.append(timing)
        loop_tokens, timing = recorded_loop(loaded, request)
        loop_times.append(timing)

    # best of the repeats; CPU time is steadier than wall time on a shared machine
    plain_wall, plain_cpu = (min(t[i] for t in plain_times) for i in (0, 1))
    loop_wall, loop_cpu = (min(t[i] for t in loop_times) for i in (0, 1))
    wall_ratio, cpu_ratio = plain_wall / loop_wall, plain_cpu / loop_cpu
    same = "same" if plain_tokens == loop_tokens else "DIFFERENT"
    print(
        f"model.generate (fast path, nothing recorded): {args.tokens / plain_wall:7.1f} tokens/s "
        f"wall, {args.tokens / plain_cpu:7.1f} tokens per CPU second"
    )
    print(
        f"page loop (newest rows, all layers x heads):  {args.tokens / loop_wall:7.1f} tokens/s "
        f"wall, {args.tokens / loop_cpu:7.1f} tokens per CPU second"
    )
    where = "" if loaded.device == "cpu" else f" on {loaded.device} in {loaded.dtype}"
    print(
        f"throughput ratio{where} (loop / plain): wall {wall_ratio:.3f}, CPU {cpu_ratio:.3f} "
        f"(goal >= {GOAL}); greedy tokens: {same}"
    )
    return wall_ratio, cpu_ratio, same


def gpu_rows(args) -> None:
    """The same comparison on the GPU in each precision, when there is one (the CPU run sets the exit status)."""
    if not torch.cuda.is_available():
        print("no GPU here: the GPU comparison (float32, bfloat16, float16 on cuda) is skipped")
        return
    for dtype in PRECISIONS:
        print()
        compare(load(args.model, device="cuda", dtype=dtype), args)
    print("(in bfloat16 and float16 the two ways round differently, so their greedy tokens may differ)")


def main(argv: list[str] | None = None) -> int:
    """Print tokens/s of both ways, their ratio, and the bytes held for attention rows."""
    parser = argparse.ArgumentParser(prog="python -m txviz bench generate", description=__doc__)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--tokens", type=int, default=128, help="new tokens per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each; the best counts")
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (1: steady on a shared machine; 0 keeps torch's default)",
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    loaded = load(args.model, device="cpu", progress=print)
    wall_ratio, cpu_ratio, same = compare(loaded, args)
    gpu_rows(args)

    n_layers, n_heads = loaded.n_layers, loaded.n_heads
    n_prompt = len(prepare(loaded, GenerationRequest(args.prompt)))
    newest, total = attention_bytes(n_layers, n_heads, n_prompt, 1024)
    full = n_layers * n_heads * (n_prompt + 1023) ** 2 * 2
    print(
        f"attention held for 1,024 new tokens ({n_layers} layers x {n_heads} heads, float16): "
        f"{newest / 1e6:.2f} MB in the newest step's rows, {total / 1e6:.1f} MB for all steps "
        f"(one full [T, T] matrix of every head at the last step: {full / 1e6:.0f} MB)"
    )
    return 0 if min(wall_ratio, cpu_ratio) >= GOAL and same == "same" else 1
