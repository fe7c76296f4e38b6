"""Linear attention: phi = elu + 1, the O(n) form, the recurrent form, on MiniLM's real q, k, v."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.bench import linear as bench
from txviz.selfattention import linear as la

TEXT = "The animal didn't cross the street because it was too tired."


def random_qkv(n: int = 9, d: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(n, d)), rng.normal(size=(n, 3))


def test_phi_is_elu_plus_one():
    x = np.array([-3.0, -0.5, 0.0, 0.7, 4.0])
    np.testing.assert_allclose(la.phi(x), torch.nn.functional.elu(torch.tensor(x)).numpy() + 1)
    assert (la.phi(x) > 0).all()


def test_linear_form_equals_the_matrix_form():
    q, k, v = random_qkv()
    expected = np.array(
        [
            sum(la.phi(qi) @ la.phi(km) * vm for km, vm in zip(k, v, strict=True))
            / sum(la.phi(qi) @ la.phi(km) for km in k)
            for qi in q
        ]
    )
    np.testing.assert_allclose(la.linear_attention(q, k, v), expected, atol=1e-12)
    np.testing.assert_allclose(la.linear_weights(q, k) @ v, expected, atol=1e-12)


def test_recurrent_form_equals_the_causal_parallel_form():
    q, k, v = random_qkv(12, 5, 3)
    parallel = la.linear_weights(q, k, causal=True) @ v
    np.testing.assert_allclose(la.recurrent_linear_attention(q, k, v), parallel, atol=1e-12)
    # the first output sees only the first value
    np.testing.assert_allclose(parallel[0], v[0], atol=1e-12)


def test_softmax_weights_rows_and_mask():
    q, k, _ = random_qkv()
    weights = la.softmax_weights(q, k, causal=True)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    assert np.triu(weights, 1).max() == 0.0


def test_minilm_head_matches_the_models_attention(minilm):
    head = la.minilm_head(minilm, TEXT, 2, 3)
    n = len(head.tokens)
    assert head.queries.shape == head.keys.shape == head.values.shape == (n, 32)
    outputs = {}
    module = minilm.model.encoder.layer[2].attention.self

    def keep(module, args, out) -> None:  # returns None: the model's output stays as it was
        outputs["context"] = out[0]

    hook = module.register_forward_hook(keep)
    try:
        with torch.no_grad():
            minilm.model(**minilm.tokenizer(TEXT, return_tensors="pt"))
    finally:
        hook.remove()
    context = outputs["context"][0, :, 3 * 32 : 4 * 32].numpy()  # head 3 of the context layer
    result = la.compare(head)
    np.testing.assert_allclose(result.softmax @ head.values, context, atol=1e-4)
    assert result.recomputed_vs_captured < 1e-5
    assert result.fast_vs_matrix < 1e-10 and result.recurrent_vs_parallel < 1e-10
    assert 0.0 < result.weight_distance < 1.0 and result.output_error > 0.0


def test_bad_head(minilm):
    with pytest.raises(la.LinearAttentionError, match="outside"):
        la.minilm_head(minilm, TEXT, 6, 0)


def test_timings_and_bench(capsys):
    rows = la.time_both((64, 128), d=16, repeats=1)
    assert [r.n for r in rows] == [64, 128] and all(r.softmax_s > 0 and r.linear_s > 0 for r in rows)
    assert bench.main(["--sizes", "64", "256", "--repeats", "1", "--dim", "16"]) == 0
    out = capsys.readouterr().out
    assert "ratio softmax / linear" in out and out.count("x |") == 2
