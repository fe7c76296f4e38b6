"""The shipped mixture of experts and its dense baselines reproduce runs.json."""

from __future__ import annotations

import pytest

from txviz.block import moe


def test_shipped_scores_reproduce_and_beat_the_baselines():
    models, runs = moe.load()
    config = moe.MoEConfig(**runs["config"])
    for name, model in models.items():
        assert moe.held_out_mse(model, config) == pytest.approx(
            runs["models"][name]["held_out_mse"], rel=1e-6
        )
        assert moe.weights(model) == runs["models"][name]["weights"]
    _, y = moe.make_data(config.held_out, runs["held_out_seed"])
    assert runs["predict_the_mean_mse"] == pytest.approx(float(((y - y.mean()) ** 2).mean()), rel=1e-5)
    mse = [runs["models"][name]["held_out_mse"] for name in moe.MODELS]
    assert mse[1] < mse[0] and mse[1] <= mse[2] < runs["predict_the_mean_mse"]
    load = moe.routing(models[moe.MODELS[1]], config).load
    assert load.min() > 0.1  # every expert in use
