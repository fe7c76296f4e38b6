"""`python -m txviz features --model M --place P --corpus F`: train (or open, or resume) a dictionary and index it."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from txviz.atlas import corpus
    from txviz.features.sae import Settings

    default = Settings()
    parser.add_argument("--model", default="smollm2")
    parser.add_argument(
        "--place",
        default=None,
        help="decoder.L.resid_pre or decoder.L.head_out (default: the middle block's input)",
    )
    corpus.add_argument(parser)
    parser.add_argument("--tokens", type=int, default=default.tokens, help="training tokens")
    parser.add_argument("--expansion", type=int, default=default.expansion, help="features per dimension")
    parser.add_argument("--k", type=int, default=default.k, help="active features per token")
    parser.add_argument("--device", default="auto")


def run(args: argparse.Namespace) -> int:
    """Build or open the dictionary, progress on stderr; a clear message and exit 2 on bad input."""
    from txviz import models
    from txviz.atlas import corpus
    from txviz.core.countdown import on_stderr
    from txviz.core.errors import UserError
    from txviz.features import opening
    from txviz.features.activations import Place
    from txviz.features.sae import Settings

    try:
        loaded = models.load(args.model, args.device)
        place = Place.parse(args.place or opening.default_place(loaded))
        settings = Settings(tokens=args.tokens, expansion=args.expansion, k=args.k)
        print(f"{place.name}: {opening.check_memory(loaded, place, settings)}", file=sys.stderr)
        found = opening.open_or_build(
            loaded, corpus.named_or_file(args.corpus), place, settings, on_stderr(90)
        )
    except (UserError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(file=sys.stderr)
    for notice in found.notices:
        print(notice, file=sys.stderr)
    live = int((found.index.density > 0).sum())
    print(
        f"{args.model} {place.name}: {found.sae.width:,} features ({live:,} fired on {found.index.tokens:,} "
        f"indexed tokens), trained on {found.meta['tokens']:,} tokens of {found.meta['corpus']}; "
        f"open it on the Features page (?model={args.model}&place={place.name})"
    )
    return 0
