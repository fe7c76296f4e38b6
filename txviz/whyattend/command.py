"""`python -m txviz why-attend`: one attention score split into query-side x key-side parts, as .npz."""

from __future__ import annotations

import argparse
import sys

import numpy as np


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--text", required=True)
    parser.add_argument("--layer", type=int, required=True)
    parser.add_argument("--head", type=int, required=True)
    parser.add_argument("--query", type=int, required=True, help="query token position")
    parser.add_argument("--key", type=int, required=True, help="key token position")
    parser.add_argument("--contrast", type=int, help="a second key: split s(query, key) - s(query, contrast)")
    parser.add_argument("--row", action="store_true", help="split the score against the row's softmax mean")
    parser.add_argument(
        "--layers-only", action="store_true", help="one part per attention layer, not per head"
    )
    parser.add_argument("--out", default="why-attend.npz")
    parser.add_argument("--device", default="cpu")


def run(args: argparse.Namespace) -> int:
    """Decompose and write parts_q, parts_k, pairs, score; a clear message and exit 2 on bad input."""
    from txviz import models
    from txviz.core.errors import UserError
    from txviz.whyattend import decompose, words

    mode = "contrast" if args.contrast is not None else "row" if args.row else "edge"
    try:
        loaded = models.load(args.model, args.device, dtype="float32")  # decomposed in float32
        encoded = loaded.tokenizer(args.text, return_tensors="pt")
        ids = encoded["input_ids"].to(loaded.device)
        d = decompose.decompose(
            loaded.model, ids, args.layer, args.head, args.query, args.key,
            mode=mode, contrast=args.contrast, expand=not args.layers_only,
        )  # fmt: skip
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    tokens = loaded.tokenizer.convert_ids_to_tokens(ids[0].tolist())
    np.savez(
        args.out,
        parts_q=np.array([p.name for p in d.parts_q]),
        parts_k=np.array([p.name for p in d.parts_k]),
        pairs=d.pairs,
        score=np.float32(d.score),
        edge_score=np.float32(d.edge_score),
        tokens=np.array(tokens),
    )
    print(f"{args.out}: {len(d.parts_q)} x {len(d.parts_k)} parts, {mode} score {d.score:.4f} (float32)")
    for line in words.ranked(d, tokens, 5):
        print("  " + line)
    return 0
