"""Head detectors on hand-built attention tensors with known answers, and the corpus bounds."""

import numpy as np
import pytest

from txviz.heads import corpus, detectors
from txviz.heads.detectors import text_masses


def _scores(weights, tokens, causal, which="text", ids=None, special=None):
    special = special if special is not None else [False] * len(tokens)
    masses = text_masses(weights, tokens, special, causal, ids=ids, which=which)
    return {k: detectors.mean_score([m], weights.shape[:2]) for k, m in masses.items()}


def _heads(*matrices):
    """[1 layer, H heads, n, n] from H matrices."""
    return np.stack(matrices)[None].astype(np.float32)


def previous_token_head(n):
    a = np.eye(n, k=-1)
    a[0, 0] = 1.0  # the first token has no previous one: it attends to itself
    return a


def test_pure_previous_token_head_scores_one_and_uniform_one_over_n():
    n = 7
    tokens = list("abcdefg")
    weights = _heads(previous_token_head(n), np.full((n, n), 1 / n))
    s = _scores(weights, tokens, causal=False)
    np.testing.assert_allclose(s["previous_token"][0], [1.0, 1 / n])
    np.testing.assert_allclose(s["first_token"][0], [1 / (n - 1), 1 / n])  # row 1 -> 0 only, of rows 1..6
    np.testing.assert_allclose(s["offset_minus2"][0], [0.0, 1 / n])
    np.testing.assert_allclose(s["broad"][0], [0.0, 1.0], atol=1e-6)  # uniform: entropy is log n
    assert np.isnan(s["sep"]).all()  # no [SEP] in the text: not measurable, not zero
    for values in s.values():
        values = values[~np.isnan(values)]
        assert np.all((values >= 0) & (values <= 1 + 1e-9))


def test_first_token_sink_and_offsets_and_causal_future():
    n = 6
    sink = np.zeros((n, n))
    sink[:, 0] = 1.0
    plus2 = np.zeros((n, n))
    for i in range(n):
        plus2[i, i + 2 if i + 2 < n else i] = 1.0
    s = _scores(_heads(sink, plus2), list("abcdef"), causal=False)
    np.testing.assert_allclose(s["first_token"][0], [1.0, 0.0])
    np.testing.assert_allclose(s["offset_plus2"][0], [0.0, 1.0])  # rows 0..3 only, where i+2 exists
    causal = _scores(
        _heads(sink, np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]), list("abcdef"), True
    )
    assert np.isnan(causal["offset_plus2"]).all()  # a decoder cannot look ahead: not measurable
    # a causal uniform head puts 1/(i+1) on position 0 from row i; first_token averages rows 1..5
    np.testing.assert_allclose(causal["first_token"][0, 1], np.mean(1 / np.arange(2, n + 1)))


def test_sep_and_punctuation_targets():
    tokens = ["[CLS]", "hi", ",", "there", "[SEP]"]
    special = [True, False, False, False, True]
    to_sep = np.zeros((5, 5))
    to_sep[:, 4] = 1.0
    to_comma = np.zeros((5, 5))
    to_comma[:, 2] = 1.0
    s = _scores(_heads(to_sep, to_comma), tokens, causal=False, special=special)
    np.testing.assert_allclose(s["sep"][0], [1.0, 0.0])
    np.testing.assert_allclose(s["punctuation"][0], [0.0, 1.0])
    assert (
        detectors.is_punctuation("...")
        and not detectors.is_punctuation("a.")
        and not detectors.is_punctuation(" ")
    )


def test_induction_and_duplicate_on_a_repeated_sequence():
    length = 5
    ids = [10, 11, 12, 13, 14] * 2
    n = len(ids)
    induction = previous_token_head(n)  # first copy: anything; second copy: i -> i - L + 1
    duplicate = previous_token_head(n)
    for i in range(length, n):
        induction[i] = 0
        induction[i, i - length + 1] = 1.0
        duplicate[i] = 0
        duplicate[i, i - length] = 1.0
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    s = _scores(_heads(induction, duplicate, uniform), ids, causal=True, which="repeats", ids=ids)
    np.testing.assert_allclose(s["induction"][0, :2], [1.0, 0.0])
    np.testing.assert_allclose(s["duplicate_token"][0, :2], [0.0, 1.0])
    # uniform causal: row i (second copy) gives 1/(i+1) to its single target
    np.testing.assert_allclose(s["induction"][0, 2], np.mean(1 / (np.arange(length, n) + 1)))
    assert set(s) == {"induction", "duplicate_token"}


def test_induction_targets_match_the_olsson_diagonal():
    length = 4
    targets = detectors.induction_targets(list("wxyz") * 2)
    expected = np.zeros((8, 8), dtype=bool)
    for i in range(length, 8):
        expected[i, i - length + 1] = True
    np.testing.assert_array_equal(targets, expected)


def test_one_token_text_scores_nan_not_an_error():
    s = _scores(np.ones((1, 2, 1, 1), dtype=np.float32), ["a"], causal=True)
    assert all(np.isnan(v).all() for v in s.values())


def test_rows_that_do_not_sum_to_one_are_renormalised():
    a = previous_token_head(4) * 0.5  # e.g. after hiding special tokens
    s = _scores(_heads(a), list("abcd"), causal=False)
    np.testing.assert_allclose(s["previous_token"], [[1.0]])


def test_corpus_is_bounded_with_a_notice():
    big = ("word " * 150 + "\n\n") * 30_000  # ~23 MB
    bounded = corpus.from_text(big)
    assert len(bounded.texts) == corpus.MAX_TEXTS
    assert "only the first 200,000" in bounded.notice and "passages" in bounded.notice
    assert all(len(t) <= corpus.CHUNK_CHARS for t in bounded.texts)
    with pytest.raises(corpus.CorpusError, match="empty"):
        corpus.from_text(" \n\n \n")
    one = corpus.from_text("x" * 2000)  # no spaces: cut hard
    assert [len(t) for t in one.texts] == [600, 600, 600, 200]
