"""date-bart decoded all at once against left to right on held-out dates: numbers recomputed here."""

from __future__ import annotations

import numpy as np
import pytest

from txviz import models
from txviz.seq2seq import dates, parallel
from txviz.seq2seq.decoding import decode

EXAMPLES = 60


@pytest.fixture(scope="module")
def date_model():
    return models.load("date-bart", "cpu")


@pytest.fixture(scope="module")
def comparison(date_model):
    return parallel.compare_on_dates(date_model, examples=EXAMPLES)


def test_exact_match_is_recomputed_from_the_outputs(date_model, comparison):
    pairs = dates.train_and_heldout()[1][:EXAMPLES]
    encoded = date_model.tokenizer([p.source for p in pairs], padding=True, return_tensors="pt")
    for strategy, passes in (("mask-predict", 1), ("mask-predict", 5), ("jacobi", 3)):
        result = parallel.refine(date_model, encoded.input_ids, encoded.attention_mask, 11, passes, strategy)
        outputs = parallel.texts(date_model, result.tokens[-1])
        expected = np.mean([o == p.target for o, p in zip(outputs, pairs, strict=True)])
        assert comparison.exact_match[strategy][passes - 1] == pytest.approx(expected)


def test_greedy_is_the_page_decoder_and_takes_one_pass_per_token(date_model, comparison):
    pairs = dates.train_and_heldout()[1][:EXAMPLES]
    outputs = [decode(date_model, p.source).output_text for p in pairs[:10]]
    encoded = date_model.tokenizer([p.source for p in pairs[:10]], padding=True, return_tensors="pt")
    batch, steps = parallel.greedy_batch(date_model, encoded.input_ids, encoded.attention_mask)
    assert batch == outputs and steps == [11] * 10  # ten characters and the end token
    assert comparison.greedy_passes == 11.0 and comparison.greedy_exact_match == 1.0


def test_one_parallel_pass_fails_and_jacobi_ends_at_greedy(comparison):
    """Out of its training distribution one pass is useless; eleven Jacobi passes are greedy exactly."""
    assert comparison.exact_match["mask-predict"][0] == comparison.exact_match["jacobi"][0] < 0.1
    assert comparison.exact_match["jacobi"][-1] == comparison.greedy_exact_match
    assert 1 <= comparison.mean_converged <= 11
    assert "greedy decoding is right on 100.0%" in parallel.reading(comparison)
