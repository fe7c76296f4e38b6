"""`python -m txviz explain`: generate, then explain every step into one .npz of [steps, ...] arrays."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from txviz.explain.methods import IG_STEPS, METHODS

if TYPE_CHECKING:
    import numpy as np

    from txviz.models import LoadedModel


def options() -> argparse.ArgumentParser:
    """The explain command's options, as an argparse parent."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument(
        "--method",
        choices=sorted(METHODS),
        default="gradient",
        help="gradient x input (default), ig or ablation",
    )
    parser.add_argument("--ig-steps", type=int, default=IG_STEPS, help="integrated gradients' path steps")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 (default) is greedy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="explain.npz")
    parser.add_argument("--device", default="auto")
    return parser


def explain_generation(
    loaded: LoadedModel, prompt: str, max_new_tokens: int, method: str = "gradient",
    temperature: float = 0.0, seed: int = 0, ig_steps: int = IG_STEPS,
) -> dict[str, np.ndarray]:  # fmt: skip
    """Generate, then every step's attribution, newest-token attention, lens and scores (see the README)."""
    import numpy as np

    from txviz.explain.attribution import Target, attribute_step
    from txviz.explain.scores import generation_scores
    from txviz.explain.step import check_step, step_context, step_lens
    from txviz.generation.loop import GenerationRequest, generate, prepare, sequence_tokens
    from txviz.generation.sampling import SamplingSettings

    request = GenerationRequest(prompt, max_new_tokens, SamplingSettings(temperature, seed=seed))
    first = prepare(loaded, request)
    steps = list(generate(loaded, request, first))
    check_step(len(steps), 0)
    generated = [s.token_id for s in steps]
    n = len(first) + len(steps)
    attribution = np.zeros((len(steps), n), dtype=np.float32)  # zero past what each step read
    attention = np.zeros((len(steps), n), dtype=np.float32)
    lens_rank = np.zeros((len(steps), loaded.n_layers + 1), dtype=np.int64)
    for s, step in enumerate(steps):
        context, chosen = step_context(first.ids, generated, s)
        attribution[s, : len(context)] = attribute_step(loaded, context, Target(chosen), method, ig_steps)
        attention[s, : len(context)] = step.attention[-1].astype(np.float32).mean(axis=0)
        lens_rank[s] = step_lens(loaded, context, chosen).rank
    scores = generation_scores(steps)
    return {
        "tokens": np.array(sequence_tokens(first, steps), dtype=str),
        "generated": np.array(generated, dtype=np.int64),
        "attribution": attribution,
        "attention": attention,
        "lens_rank": lens_rank,
        **{name: values.astype(np.float32) for name, values in scores.items()},
        "method": np.array(method),
    }


def run(args: argparse.Namespace) -> int:
    """Explain and write the .npz; a clear message and exit 2 on bad input."""
    import numpy as np

    from txviz import models
    from txviz.core.errors import UserError

    try:
        loaded = models.load(args.model, args.device)
        arrays = explain_generation(
            loaded, args.prompt, args.max_new_tokens, args.method, args.temperature, args.seed, args.ig_steps
        )
    except UserError as error:  # ModelLoadError, GenerationError, ExplainError...
        print(f"error: {error}", file=sys.stderr)
        return 2
    np.savez_compressed(Path(args.out), **arrays)
    steps, positions = arrays["attribution"].shape
    print(
        f"{args.out}: {steps} steps x {positions} positions ({METHODS[args.method]}), lens of {loaded.n_layers} layers"
    )
    return 0
