"""The shipped several-heads models reproduce their held-out scores in runs.json."""

from __future__ import annotations

import pytest

from txviz.selfattention import twoheads as th


def test_shipped_scores_reproduce():
    models, runs = th.load()
    config = th.TwoHeadsConfig(**runs["config"])
    held_out = th.make_batch(config.held_out, runs["held_out_seed"], config)
    for heads, model in models.items():
        scores = th.accuracy(model, held_out)
        for what in ("subject", "object", "both"):
            assert scores[what] == pytest.approx(runs[f"heads_{heads}"][what], abs=1e-6)
    assert runs["heads_2"]["both"] > 0.99 and runs["heads_1"]["both"] < 0.3
    assert runs["chance"] == 1 / config.symbols
