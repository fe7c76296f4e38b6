"""The capture attention function against transformers' own eager attention, on tiny random models."""

import copy
import threading

import numpy as np
import pytest
import torch
from tiny_models import VOCAB, tiny_model

from txviz.core import attention, capture, routes
from txviz.core.capture import CaptureSettings


def tiny(kind: str):
    """A random model of the given family and an eager twin with identical weights."""
    model = tiny_model(kind, VOCAB, capture=False)
    eager = copy.deepcopy(model)
    eager.set_attn_implementation("eager")
    return capture.use_capture(model), eager


IDS = torch.tensor([[5, 17, 42, 8, 99, 3, 17]])


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_captured_weights_equal_eager_output_attentions(kind):
    model, eager = tiny(kind)
    with torch.no_grad():
        reference = eager(input_ids=IDS, output_attentions=True).attentions
        with capture.capture(model, CaptureSettings(record={"weights"})) as rec:
            model(input_ids=IDS)
    assert len(rec.records) == 2  # one record per layer
    captured = rec.stack("weights")  # (L, H, T, T)
    expected = torch.stack([a[0] for a in reference]).numpy()
    assert captured.shape == expected.shape == (2, 4, 7, 7)
    np.testing.assert_allclose(captured, expected, atol=1e-5)
    np.testing.assert_allclose(captured.sum(-1), 1.0, atol=1e-5)
    if kind != "bert":
        assert np.triu(captured, k=1).max() == 0.0  # causal: nothing above the diagonal
    else:
        assert np.triu(captured, k=1).max() > 0.0


def test_gqa_keys_are_expanded_to_every_query_head():
    model, _ = tiny("llama")
    with torch.no_grad(), capture.capture(model, CaptureSettings(record={"keys", "queries"})) as rec:
        model(input_ids=IDS)
    keys = rec.stack("keys")  # (L, H, T, D): 2 KV heads shared by pairs of 4 query heads
    assert keys.shape == (2, 4, 7, 8)
    np.testing.assert_array_equal(keys[:, 0], keys[:, 1])
    assert not np.allclose(keys[:, 1], keys[:, 2])


def test_scores_queries_keys_reproduce_weights():
    model, _ = tiny("llama")
    with torch.no_grad(), capture.capture(model, CaptureSettings(record=set(capture.RECORDABLE))) as rec:
        model(input_ids=IDS)
    q, k, w, s = (rec.stack(x) for x in ("queries", "keys", "weights", "scores"))
    manual = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    allowed = np.isfinite(s)
    np.testing.assert_allclose(s[allowed], manual[allowed], atol=1e-5)
    np.testing.assert_allclose(attention.softmax(torch.from_numpy(s)).numpy(), w, atol=1e-6)


def test_padding_gets_zero_weight():
    model, eager = tiny("bert")
    ids = torch.tensor([[5, 17, 42, 8], [5, 17, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    with torch.no_grad():
        expected = eager(input_ids=ids, attention_mask=mask, output_attentions=True).attentions[0]
        with capture.capture(model, CaptureSettings(record={"weights"})) as rec:
            model(input_ids=ids, attention_mask=mask)
    weights = next(iter(rec.records.values()))[0].weights  # (B, H, Q, K)
    assert (weights[1, :, :, 2:] == 0).all()
    torch.testing.assert_close(weights[1, :, :2], expected[1, :, :2], atol=1e-5, rtol=0)


def test_bart_encoder_decoder_and_cross_attention_stay_apart():
    model, eager = tiny("bart")
    decoder_ids = torch.tensor([[2, 11, 12, 13]])
    with torch.no_grad():
        ref = eager(input_ids=IDS, decoder_input_ids=decoder_ids, output_attentions=True)
        with capture.capture(model, CaptureSettings(record={"weights"})) as rec:
            model(input_ids=IDS, decoder_input_ids=decoder_ids)
    names = list(rec.records)  # keyed by the model map's places
    encoder = [n for n in names if n.startswith("encoder.") and n.endswith(".attn")]
    decoder = [n for n in names if n.startswith("decoder.") and n.endswith(".attn")]
    cross = [n for n in names if n.startswith("decoder.") and n.endswith(".cross")]
    assert len(encoder) == len(decoder) == len(cross) == 2
    for group, expected, shape in (
        (encoder, ref.encoder_attentions, (7, 7)),
        (decoder, ref.decoder_attentions, (4, 4)),
        (cross, ref.cross_attentions, (4, 7)),
    ):
        captured = rec.stack("weights", names=group)
        assert captured.shape[-2:] == shape
        np.testing.assert_allclose(captured, torch.stack([a[0] for a in expected]).numpy(), atol=1e-5)
    assert np.triu(rec.stack("weights", names=decoder), k=1).max() == 0.0


def test_plain_runs_take_the_fast_path(monkeypatch):
    model, _ = tiny("llama")
    calls = []
    real = routes.sdpa_attention_forward
    monkeypatch.setattr(routes, "sdpa_attention_forward", lambda *a, **k: calls.append(1) or real(*a, **k))
    with torch.no_grad():
        model(input_ids=IDS)
        assert len(calls) == 2
        with capture.capture(model, CaptureSettings(record={"weights"})):
            model(input_ids=IDS)
        assert len(calls) == 2  # recording computes weights itself


def test_normalizer_and_extra_mask_change_the_computation():
    model, _ = tiny("bert")
    local = CaptureSettings(
        record={"weights"}, normalize=attention.hard, extra_mask=lambda q, k: (q - k).abs() <= 1
    )
    with torch.no_grad(), capture.capture(model, local) as rec:
        model(input_ids=IDS)
    weights = rec.stack("weights")
    np.testing.assert_array_equal(weights.sum(-1), 1.0)
    assert set(np.unique(weights)) == {0.0, 1.0}  # hard rows are one-hot
    q, k = np.indices((7, 7))
    assert weights[..., np.abs(q - k) > 1].max() == 0.0


def test_newest_query_only_keeps_last_row_during_cached_generation():
    model, _ = tiny("llama")
    settings = CaptureSettings(record={"weights"}, newest_query_only=True)
    with torch.no_grad(), capture.capture(model, settings) as rec:
        out = model(input_ids=IDS, use_cache=True)
        model(input_ids=torch.tensor([[7]]), past_key_values=out.past_key_values, use_cache=True)
    first, second = next(iter(rec.records.values()))
    assert first.weights.shape == (1, 4, 1, 7) and second.weights.shape == (1, 4, 1, 8)
    with torch.no_grad():
        full = model(input_ids=torch.cat([IDS, torch.tensor([[7]])], 1), output_attentions=True).attentions[0]
    torch.testing.assert_close(second.weights[0, :, 0], full[0, :, -1], atol=1e-5, rtol=0)


def test_concurrent_captures_do_not_see_each_other():
    model, _ = tiny("bert")
    results = {}

    def run(name, settings, ids):
        with torch.no_grad(), capture.capture(model, settings) as rec:
            for _ in range(5):
                model(input_ids=ids)
        results[name] = rec

    soft = threading.Thread(target=run, args=("soft", CaptureSettings(record={"weights"}), IDS))
    hard = threading.Thread(
        target=run, args=("hard", CaptureSettings(record={"weights"}, normalize=attention.hard), IDS[:, :4])
    )
    soft.start(), hard.start(), soft.join(), hard.join()
    assert all(len(calls) == 5 for calls in results["soft"].records.values())
    assert results["soft"].stack("weights").shape[-1] == 7 and results["hard"].stack("weights").shape[-1] == 4
    assert set(np.unique(results["hard"].stack("weights"))) == {0.0, 1.0}
    assert len(np.unique(results["soft"].stack("weights"))) > 2


def test_unknown_record_item_is_refused():
    with pytest.raises(ValueError, match="Cannot record"):
        CaptureSettings(record={"valuez"})


def test_softmax_stays_differentiable_and_fully_masked_rows_are_zero():
    scores = torch.tensor([[1.0, 2.0], [float("-inf"), float("-inf")]], requires_grad=True)
    weights = attention.softmax(scores)
    weights[0, 1].backward()
    assert scores.grad is not None and torch.isfinite(scores.grad[0]).all()
    assert weights[1].tolist() == [0.0, 0.0]
