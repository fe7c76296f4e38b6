"""The query-key space: the key translation and norm balance keep attention, a 2-token toy lands
where the maths says, and a real model's recorded queries and keys reproduce its weights."""

import numpy as np
import pytest

from txviz.heads import qkspace


def _softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_two_token_toy_lands_where_the_maths_says():
    q = np.array([[2.0, 0.0], [-2.0, 0.0]])
    k = np.array([[3.0, 0.5], [3.0, -0.5]])
    k_moved = qkspace.translate_keys(q, k)
    np.testing.assert_allclose(
        k_moved, [[0.0, 0.5], [0.0, -0.5]]
    )  # key centroid (3, 0) -> query centroid (0, 0)
    q2, k2 = qkspace.balance_norms(q, k_moved)  # mean norms 2 and 0.5: s = sqrt(0.5 / 2) = 0.5
    np.testing.assert_allclose(q2, [[1.0, 0.0], [-1.0, 0.0]])
    np.testing.assert_allclose(k2, [[0.0, 1.0], [0.0, -1.0]])
    # every query row's scores moved by one constant: attention is the same
    np.testing.assert_allclose(_softmax(q2 @ k2.T), _softmax(q @ k.T))
    coords, kept = qkspace.pca(np.concatenate([q2, k2]))
    assert kept == pytest.approx(1.0)  # 2-D data: PCA to 2-D keeps everything
    np.testing.assert_allclose(coords.mean(axis=0), 0.0, atol=1e-12)
    d = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    np.testing.assert_allclose(d[0, 1], 2.0)  # q1 (1, 0) to q2 (-1, 0)
    np.testing.assert_allclose(d[2, 3], 2.0)  # k1 (0, 1) to k2 (0, -1)
    np.testing.assert_allclose(d[0, 2], np.sqrt(2.0))  # every query sqrt(2) from every key
    np.testing.assert_allclose(np.linalg.norm(coords, axis=1), 1.0)  # all four on the unit circle


def test_pca_keeps_the_direction_of_largest_variance():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 5)) * np.array([10.0, 3.0, 0.1, 0.1, 0.1])
    coords, kept = qkspace.pca(x)
    assert kept > 0.99
    assert abs(np.corrcoef(coords[:, 0], x[:, 0])[0, 1]) > 0.99


def test_translated_keys_keep_minilm_attention(minilm):
    (trace,) = qkspace.trace_texts(minilm, ["The cat sat on the mat because it was warm."])
    q, k = qkspace.head_vectors([trace], layer=2, head=5)
    scale = q.shape[1] ** -0.5
    np.testing.assert_allclose(_softmax(q @ k.T * scale), trace.weights[2, 5], atol=1e-5)
    q2, k2 = qkspace.balance_norms(q, qkspace.translate_keys(q, k))
    np.testing.assert_allclose(_softmax(q2 @ k2.T * scale), trace.weights[2, 5], atol=1e-5)
    points = qkspace.project_head([trace], 2, 5)
    n = len(trace.query_tokens)
    assert points.coords.shape == (2 * n, 2) and points.is_key.sum() == n
    assert points.context[3] == "[CLS] the cat [sat] on the mat" == points.context[n + 3]
    assert 0 < points.variance_kept < 1
    no_sink = qkspace.project_head([trace], 2, 5, skip_first=True)
    assert (
        no_sink.coords.shape == (2 * (n - 1), 2) and no_sink.tokens[0] == "the" and no_sink.positions[0] == 1
    )
    assert -1 <= qkspace.distance_agreement(no_sink, [trace], 2, 5) <= 1


def test_smollm2_causal_queries_and_keys(smollm2):
    traces = qkspace.trace_texts(smollm2, ["Alice gave Bob the book.", "Bob thanked Alice."])
    q, k = qkspace.head_vectors(traces[:1], 17, 4)  # GQA: keys already expanded to this query head
    scores = q @ k.T * q.shape[1] ** -0.5
    scores[np.triu_indices(len(q), 1)] = -np.inf
    np.testing.assert_allclose(_softmax(scores), traces[0].weights[17, 4], atol=1e-4)
    rho = qkspace.distance_agreement(qkspace.project_head(traces, 17, 4), traces, 17, 4)
    assert -1 <= rho <= 1


def test_tsne_and_its_fallback_on_few_points(minilm):
    traces = qkspace.trace_texts(minilm, ["The cat sat on the mat.", "Hi"])
    points = qkspace.project_head(traces, 1, 1, method="t-SNE")
    assert points.method == "t-SNE" and points.variance_kept is None and np.isfinite(points.coords).all()
    few = qkspace.project_head(traces[1:], 1, 1, method="t-SNE")  # 3 tokens: 6 points
    assert few.method == "PCA" and few.variance_kept is not None


def test_too_many_points_and_unknown_method_are_clear_errors(minilm):
    (trace,) = qkspace.trace_texts(minilm, ["word " * 100])
    with pytest.raises(qkspace.ProjectionError, match="Unknown projection"):
        qkspace.project_head([trace], 0, 0, method="UMAP?")
    with pytest.raises(qkspace.ProjectionError, match="fewer or shorter"):
        qkspace.project_head([trace] * 20, 0, 0)
