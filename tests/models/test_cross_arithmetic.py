"""Cross-attention recomputed from captured decoder queries and encoder keys equals the model's."""

from __future__ import annotations

import numpy as np
import pytest

from txviz import models
from txviz.seq2seq import arithmetic
from txviz.seq2seq.decoding import decode


@pytest.fixture(scope="module")
def bart_run():
    loaded = models.load("date-bart", "cpu")
    source = loaded.meta["example_source"]
    trace = decode(loaded, source)
    return loaded, trace, arithmetic.cross_attention_trace(loaded, source, trace)


def test_shapes_are_target_by_source(bart_run):
    _, trace, cross = bart_run
    n_target, n_source = len(trace.target_tokens), len(trace.source_tokens)
    assert cross.weights.shape == (2, 4, n_target, n_source)
    assert cross.queries.shape[:3] == (2, 4, n_target) and cross.keys.shape[:3] == (2, 4, n_source)


def test_same_weights_as_the_decoding_trace(bart_run):
    _, trace, cross = bart_run
    np.testing.assert_allclose(cross.weights, trace.cross.weights, atol=1e-6)


def test_every_row_recomputed_within_1e5(bart_run):
    _, _, cross = bart_run
    score_gap, weight_gap = arithmetic.largest_gaps(cross)
    assert score_gap < 1e-5 and weight_gap < 1e-5


def test_one_step_by_the_formula(bart_run):
    _, _, cross = bart_run
    step = arithmetic.cross_step(cross, 1, 2, 3)
    q, k = cross.queries[1, 2, 3].astype(np.float64), cross.keys[1, 2].astype(np.float64)
    scores = k @ q / np.sqrt(q.shape[0])
    weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
    np.testing.assert_allclose(step.scores, scores, atol=1e-12)
    np.testing.assert_allclose(weights, cross.weights[1, 2, 3], atol=1e-5)
    assert step.max_weight_difference < 1e-5 and not step.masked.any()


def test_decoder_inputs_start_with_the_start_token(bart_run):
    loaded, trace, _ = bart_run
    ids = arithmetic.decoder_inputs(loaded, trace)
    assert len(ids) == len(trace.target_tokens) and ids[1:] == [s.token_id for s in trace.steps][:-1]
