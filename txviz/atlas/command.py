"""`python -m txviz atlas --model M --corpus F`: build (or open) a model's Head Atlas and say where it is stored."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from txviz.atlas import corpus
    from txviz.atlas.atlas import Settings

    default = Settings()
    parser.add_argument("--model", default="smollm2")
    corpus.add_argument(parser)
    parser.add_argument("--window", type=int, default=default.window, help="tokens per window")
    parser.add_argument("--batch", type=int, default=default.batch, help="windows per forward pass")
    parser.add_argument("--top-k", type=int, default=default.top_k, help="top contexts kept per head")
    parser.add_argument("--device", default="auto")


def run(args: argparse.Namespace) -> int:
    """Build or open the atlas, progress on stderr; a clear message and exit 2 on bad input."""
    from txviz import models
    from txviz.atlas import corpus, store
    from txviz.atlas.atlas import Settings
    from txviz.core.countdown import on_stderr
    from txviz.core.errors import UserError

    try:
        loaded = models.load(args.model, args.device)
        text = corpus.named_or_file(args.corpus)
        settings = Settings(window=args.window, batch=args.batch, top_k=args.top_k)
        atlas, notices = store.open_or_build(loaded, text, settings, on_stderr())
    except (UserError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(file=sys.stderr)
    for notice in (*atlas.notices, *notices):
        print(notice, file=sys.stderr)
    folder = store.root() / store.key(loaded, text, settings)
    where = folder if (folder / store.META).exists() else "nowhere (kept in memory only)"
    print(
        f"{atlas.model}: {atlas.layers} layers x {atlas.heads} heads over {atlas.n_tokens:,} tokens of "
        f"{atlas.corpus} ({atlas.seconds:.1f} s to build); stored in {where}"
    )
    return 0
