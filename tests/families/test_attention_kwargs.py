"""Every attention argument transformers passes is applied or refused, never ignored; shared layers count."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz import models
from txviz.core.capture import CaptureSettings, UnsupportedAttention, txviz_attention
from txviz.core.running import NeedsCapture, run
from txviz.families import zoo

pytestmark = pytest.mark.families


def _attention_inputs(heads=2, n=5, d=4):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, d) for _ in range(3))
    module = torch.nn.Module()
    module.is_causal = True
    return module, q, k, v


def test_an_unknown_argument_that_changes_the_maths_is_refused():
    module, q, k, v = _attention_inputs()
    with pytest.raises(UnsupportedAttention, match="cu_seq_lens_q"):
        txviz_attention(module, q, k, v, None, cu_seq_lens_q=torch.tensor([0, 5]))
    txviz_attention(module, q, k, v, None, cu_seq_lens_q=None, position_ids=torch.arange(5))  # no error


def test_a_sliding_window_without_a_mask_is_applied():
    module, q, k, v = _attention_inputs()
    from txviz.core import capture

    with capture.capture(module, CaptureSettings(record={"weights"})) as recorder:
        txviz_attention(module, q, k, v, None, sliding_window=2)
    weights = next(iter(recorder.records.values()))[0].weights[0]
    far = np.tril(np.ones((5, 5), dtype=bool), -2)  # keys two or more positions back
    assert weights[:, far].abs().max() == 0
    assert torch.allclose(weights.sum(-1), torch.ones(2, 5))


def _loaded(tmp_path, name):
    folder = zoo.folders(tmp_path, {name})[name]
    return models.load(str(folder), "cpu"), folder


def test_gpt_oss_sinks_take_part_of_each_row_as_the_model_computes(tmp_path):
    loaded, folder = _loaded(tmp_path, "gpt-oss")
    ids = torch.tensor([[5, 6, 7, 8, 9, 10]])
    got = run(loaded.model, CaptureSettings(record={"weights"}), ("logits",), input_ids=ids)
    eager = type(loaded.model).from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        theirs = eager(input_ids=ids, output_attentions=True)
    np.testing.assert_allclose(
        got.stack("weights"), torch.stack([a[0] for a in theirs.attentions]), atol=1e-5
    )
    np.testing.assert_allclose(got.logits, theirs.logits, atol=1e-4)
    assert (got.stack("weights").sum(-1) < 1 - 1e-3).any()  # the rest of each row went to the sink


def test_albert_records_each_call_of_its_shared_layer(tmp_path):
    loaded, _ = _loaded(tmp_path, "ALBERT")
    got = run(loaded.model, CaptureSettings(record={"weights"}), input_ids=torch.tensor([[5, 6, 7]]))
    assert len(got.attention) == loaded.config.num_hidden_layers == 2
    assert list(got.attention)[1].endswith("#2")


def test_a_model_with_its_own_attention_is_read_eagerly_and_refuses_what_needs_capture(tmp_path):
    loaded, folder = _loaded(tmp_path, "Bloom")
    assert loaded.attention == "eager"
    ids = torch.tensor([[5, 6, 7, 8]])
    got = run(loaded.model, CaptureSettings(record={"weights"}), input_ids=ids)
    assert got.stack("weights").shape == (2, 4, 4, 4)
    with pytest.raises(NeedsCapture, match="extra mask"):
        run(loaded.model, CaptureSettings(record={"weights"}, extra_mask=lambda q, k: k <= q), input_ids=ids)


def test_the_self_check_finds_a_capture_path_that_differs(tmp_path, monkeypatch):
    from txviz.core import routes

    honest, _ = _loaded(tmp_path, "Llama")
    assert honest.check_gap is not None and honest.check_gap < 1e-5 and not honest.check_warning
    original = routes.softmax

    def off_by_a_little(scores, **kwargs):
        return original(scores * 1.5, **kwargs)

    monkeypatch.setattr(routes, "softmax", off_by_a_little)
    marked, _ = _loaded(tmp_path, "Llama")
    assert marked.check_gap > 1e-4
    assert f"{marked.check_gap:.2g}" in marked.check_warning


def test_a_switch_that_leaves_evaluation_numbers_alone_is_applied_not_refused():
    """``deterministic`` (ModernBERT's flash-attention switch) changes no number in evaluation."""
    module, q, k, v = _attention_inputs()
    plain, _ = txviz_attention(module, q, k, v, None)
    switched, _ = txviz_attention(module, q, k, v, None, deterministic=True)
    torch.testing.assert_close(switched, plain)


def test_modernbert_attention_equals_its_own(tmp_path):
    loaded, folder = _loaded(tmp_path, "ModernBERT")
    ids = torch.tensor([[2, 5, 6, 7, 8, 9, 10, 11, 3]])
    got = run(loaded.model, CaptureSettings(record={"weights"}), ("hidden",), input_ids=ids)
    eager = type(loaded.model).from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        theirs = eager(input_ids=ids, output_attentions=True)
    np.testing.assert_allclose(
        got.stack("weights"), torch.stack([a[0] for a in theirs.attentions]), atol=1e-5
    )
    np.testing.assert_allclose(got.hidden, theirs.last_hidden_state, atol=1e-4)
