"""`python -m txviz heads`: every head's detector scores as one [layers, heads] array each in an .npz."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--out", default="heads.npz")
    parser.add_argument("--seed", type=int, default=0, help="seed of the repeated random sequences")
    parser.add_argument("--repeats", type=int, default=8, help="how many repeated random sequences")
    parser.add_argument("--length", type=int, default=20, help="random tokens per sequence (said twice)")
    parser.add_argument("--offset", type=int, default=2, help="k of the fixed-offset detectors +-k")
    parser.add_argument("--corpus", help="a UTF-8 .txt file to score on instead of the shipped texts")
    parser.add_argument("--device", default="auto")


def run(args: argparse.Namespace) -> int:
    """Score the heads and write the .npz; a clear message and exit 2 on bad input."""
    from txviz import models
    from txviz.core.errors import UserError
    from txviz.heads import corpus, runs

    try:
        loaded = models.load(args.model, args.device)
        texts = corpus.from_text(Path(args.corpus).read_text("utf-8")) if args.corpus else None
        settings = runs.RepeatSettings(args.repeats, args.length, args.seed)
        scores = runs.score_heads(loaded, texts or corpus.default_corpus(), settings, args.offset)
    except (UserError, OSError, UnicodeDecodeError) as error:  # a corpus file that is not UTF-8
        print(f"error: {error}", file=sys.stderr)
        return 2
    for notice in (texts.notice if texts else "", scores.notice):
        if notice:
            print(notice, file=sys.stderr)
    runs.save_npz(scores, args.out)
    print(
        f"{args.out}: {len(scores.scores)} detectors x {scores.shape[0]} layers x {scores.shape[1]} heads "
        f"over {len(scores.texts)} texts in {scores.seconds:.1f} s"
    )
    for name in ("previous_token", "induction"):
        values = scores.scores[name]
        layer, head = divmod(int(values.argmax()), values.shape[1])
        print(f"  top {name}: layer {layer} head {head} ({values[layer, head]:.3f})")
    return 0
