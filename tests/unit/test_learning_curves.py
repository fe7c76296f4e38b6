"""Learning curves: the crossing against a hand-worked example, the nested balanced subsets, the reading."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.training import curves as training
from txviz.vision import curves


def test_crossing_is_where_the_gap_meets_zero_in_log_size():
    # gap -0.1 at 100 images, +0.1 at 400: zero halfway in log size, sqrt(100 * 400) = 200 images
    assert curves.crossing([100, 400], [0.8, 0.8], [0.7, 0.9]) == pytest.approx(200.0)
    # gap -0.3 then +0.1: a quarter of the way, 10 ** (2 + 0.75 * 1)
    assert curves.crossing([100, 1000], [0.8, 0.8], [0.5, 0.9]) == pytest.approx(10**2.75)
    assert curves.crossing([50, 100, 200], [0.9, 0.9, 0.9], [0.5, 0.6, 0.8]) is None
    assert curves.crossing([50, 100], [0.5, 0.5], [0.9, 0.9]) is None  # ahead from the start: no crossing


def test_subset_order_is_nested_balanced_and_a_permutation():
    labels = np.repeat(np.arange(10), [140, 150, 143, 146, 145, 144, 143, 144, 140, 142])
    order = training.subset_order(labels, seed=0)
    assert sorted(order) == list(range(len(labels)))
    assert np.bincount(labels[order[:50]], minlength=10).tolist() == [5] * 10
    assert np.bincount(labels[order[:200]], minlength=10).tolist() == [20] * 10
    assert (training.subset_order(labels, seed=0) == order).all()


def test_steps_are_thirty_passes_and_at_least_the_minimum():
    settings = training.CurveSettings()
    assert training.steps_for(50, settings) == 400  # 30 passes of 2 batches would be 60
    assert training.steps_for(1437, settings) == 30 * 45  # ceil(1437 / 32) = 45 batches a pass


def test_reading_says_who_is_ahead_from_the_numbers():
    shipped = curves.load()
    text = curves.reading(shipped)
    cnn, vit = (shipped.accuracy[m] for m in curves.MODELS)
    assert f"{cnn[0]:.1%}" in text and f"{vit[-1]:.1%}" in text
    if curves.crossing(shipped.sizes, cnn, vit) is None:
        assert "never catches up" in text
