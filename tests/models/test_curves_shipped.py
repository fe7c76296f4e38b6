"""The shipped learning curves reproduce from their seed: the 50-image points retrained here."""

from __future__ import annotations

import json

import pytest

from txviz.core.threads import torch_threads
from txviz.training import curves as training
from txviz.vision import curves


def test_the_50_image_points_reproduce_on_one_thread():
    runs = json.loads(curves.ASSETS_FILE.read_text())
    settings = training.CurveSettings(**runs["settings"])
    fresh = training.measure(sizes=(50,), settings=settings, log=lambda _: None)
    images = 12 / runs["heldout_images"]  # another CPU rounds otherwise: 4 and 8 of 360 images on an AMD EPYC
    for name in curves.MODELS:
        shipped, again = runs["models"][name][0], fresh["models"][name][0]
        # Same seed, one thread: identical on the machine that trained them; on another CPU float rounding
        # moves the training a little (the weights' count and the steps stay exact).
        assert again["accuracy"] == pytest.approx(shipped["accuracy"], abs=images + 1e-9), name
        assert again["weights"] == shipped["weights"] and again["steps"] == shipped["steps"] == 400
    for name, values in fresh["baselines"].items():
        assert values[0] == pytest.approx(runs["baselines"][name][0], abs=1e-9)


def test_shipped_numbers_are_consistent():
    runs = json.loads(curves.ASSETS_FILE.read_text())
    assert runs["sizes"] == list(curves.SIZES)
    for values in runs["baselines"]["majority"]:
        assert values == pytest.approx(36 / 360)  # 36 of each digit in the stratified held-out split
    with torch_threads(1):
        assert (
            training.weights(training.build(curves.MODELS[0]))
            == runs["models"][curves.MODELS[0]][0]["weights"]
        )
    shipped = curves.load()
    for name in curves.MODELS:  # every accuracy is a whole number of the 360 held-out images
        counts = shipped.accuracy[name] * shipped.heldout_images
        assert counts == pytest.approx(counts.round(), abs=1e-3)
