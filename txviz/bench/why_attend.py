"""Why a head attends: one edge's full decomposition (heads expanded) and a whole row, against one plain forward."""

from __future__ import annotations

import argparse

import torch

from txviz import models
from txviz.bench.capture import text_of, timed_pair
from txviz.whyattend.decompose import decompose


def ratio(loaded, n_tokens: int, mode: str, repeats: int) -> float:
    text = text_of(loaded, n_tokens)
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])
    layers = loaded.model.config.num_hidden_layers
    layer, query = layers - 1, ids.shape[1] - 1  # the last block: every earlier head is a part

    def plain():
        with torch.no_grad():
            loaded.model(input_ids=ids)

    base, split = timed_pair(
        plain, lambda: decompose(loaded.model, ids, layer, 0, query, 1, mode=mode), repeats
    )
    print(f"{mode} at {ids.shape[1]} tokens: forward {base['wall'] * 1e3:.0f} ms, decomposition "
          f"{split['wall'] * 1e3:.0f} ms")  # fmt: skip
    return split["wall"] / base["wall"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz bench why-attend")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    loaded = models.load(args.model, "cpu")
    row = ratio(loaded, 256, "row", args.repeats)
    edge = ratio(loaded, 64, "edge", args.repeats)
    print(f"whole row / forward at 256 tokens = {row:.2f}x (goal <= 5x)")
    print(f"one edge / forward at 64 tokens = {edge:.2f}x")
    return 0
