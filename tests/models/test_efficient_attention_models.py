"""Linformer and Performer on MiniLM's captured queries and keys: the limits hold on a real head."""

from __future__ import annotations

import numpy as np

from txviz.selfattention import efficient, linear

TEXT = "The animal didn't cross the street because it was too tired."


def test_efficient_attention_on_a_minilm_head(minilm):
    head = linear.minilm_head(minilm, TEXT, 2, 3)
    versus = efficient.versus_softmax(head, 4, "segment means", 64)
    sizes, errors = versus.curves["Linformer, segment means E"]
    assert sizes[-1] == len(head.tokens) and errors[-1] < 1e-12  # kp = n: softmax exactly
    counts, performer = versus.curves["Performer (FAVOR+)"]
    assert performer[-1] < performer[0]  # more features, closer to softmax
    # the spread is recomputed here pair by pair
    d = head.queries.shape[1]
    spread = max(np.sum((q + k) ** 2) / np.sqrt(d) for q in head.queries for k in head.keys)
    assert abs(versus.spread - spread) < 1e-9
    assert 0 < versus.comparison.performer_distance < 1


def test_performer_fails_on_the_trained_head_and_converges_once_cooled(minilm):
    head = linear.minilm_head(minilm, TEXT, 2, 3)
    versus = efficient.versus_softmax(head, 4, "segment means", 64)
    assert versus.spread > 20 and versus.calm_spread <= efficient.WELL_CONDITIONED
    assert abs(versus.calm_spread - versus.spread / versus.calm_temperature) < 1e-9
    _, trained = versus.curves[efficient.PERFORMER]
    _, calm = versus.curves[efficient.calm_name(versus.calm_temperature)]
    assert min(trained) > 0.3  # thousands of features still leave a third of the output wrong
    assert calm[-1] < 0.05 and calm[-1] < calm[0] / 4  # the cooled head converges
