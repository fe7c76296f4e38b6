"""Row statistics of every attention call against their definitions on exact maps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import tiny_model

from txviz.core import rowstats
from txviz.core.capture import CaptureSettings, use_capture
from txviz.core.running import run

SPEC = rowstats.RowStatistics(sink=3, window=5, chunk=7)


def exact_weights(model, ids) -> np.ndarray:
    out = run(model, CaptureSettings(record=frozenset({"weights"})), input_ids=ids)
    return np.stack(
        [calls[-1].weights[0].double().numpy() for calls in out.attention.values()]
    )  # [L, H, T, T]


def definitions(w: np.ndarray, spec: rowstats.RowStatistics) -> dict[str, np.ndarray]:
    n = w.shape[-1]
    apart = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    logs = np.log(np.where(w > 0, w, 1.0))
    return {
        "entropy": -(w * logs).sum(-1),
        "distance": (w * apart).sum(-1),
        "sink": w[..., : spec.sink].sum(-1),
        "local": (w * (apart <= spec.window)).sum(-1),
    }


def assert_agree(got: dict, expected: dict) -> None:
    for name in rowstats.NAMES:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=2e-5, err_msg=name)


def stats_of(model, ids, settings) -> dict[str, np.ndarray]:
    out = run(model, settings, input_ids=ids)
    calls = [calls[-1].row_stats for calls in out.attention.values()]
    return {name: np.stack([getattr(c, name)[0].numpy() for c in calls]) for name in rowstats.NAMES}


@pytest.mark.parametrize("family", ["llama", "gpt2", "bert"])
def test_row_statistics_equal_their_definitions(family):
    torch.manual_seed(0)
    model = use_capture(tiny_model(family, 64, max_position_embeddings=128))
    ids = torch.randint(0, 64, (1, 40))
    expected = definitions(exact_weights(model, ids), SPEC)
    assert_agree(stats_of(model, ids, CaptureSettings(row_stats=SPEC)), expected)


def test_the_fused_route_and_the_blocks_agree_and_the_fused_one_is_taken(monkeypatch):
    torch.manual_seed(1)
    model = use_capture(tiny_model("llama", 64, max_position_embeddings=256))
    ids = torch.randint(0, 64, (1, 150))
    calls, real = [], rowstats.fused
    monkeypatch.setattr(rowstats, "fused", lambda *a: calls.append(1) or real(*a))
    fused = stats_of(model, ids, CaptureSettings(row_stats=SPEC))
    assert len(calls) == model.config.num_hidden_layers  # every layer took the fused kernel
    # an extra mask that allows everything sends every call through the explicit blocks instead
    blocks = stats_of(model, ids, CaptureSettings(row_stats=SPEC, extra_mask=lambda q, k: k >= 0))
    assert len(calls) == model.config.num_hidden_layers
    assert_agree(fused, blocks)


def test_row_statistics_leave_the_output_unchanged():
    torch.manual_seed(2)
    model = use_capture(tiny_model("llama", 64, max_position_embeddings=128))
    ids = torch.randint(0, 64, (1, 30))
    plain = run(model, outputs=("logits",), input_ids=ids).logits
    with_stats = run(model, CaptureSettings(row_stats=SPEC), ("logits",), input_ids=ids).logits
    # float rounding only: the kernel may tile its wider head differently from SDPA's on some CPUs
    torch.testing.assert_close(with_stats, plain, rtol=1e-5, atol=1e-6)


def test_a_kernel_that_refuses_grouped_heads_gets_one_key_copy_per_head(monkeypatch):
    torch.manual_seed(3)
    model = use_capture(tiny_model("llama", 64, max_position_embeddings=128))
    ids = torch.randint(0, 64, (1, 40))
    assert model.config.num_key_value_heads < model.config.num_attention_heads
    real, shapes = rowstats._KERNEL, []

    def ungrouped(query, key, *args, **kwargs):
        shapes.append(key.shape[1])
        if key.shape[1] != query.shape[1]:
            raise RuntimeError("number of heads in key and value must equal the query's")
        return real(query, key, *args, **kwargs)

    monkeypatch.setattr(rowstats, "_KERNEL", ungrouped)
    expected = definitions(exact_weights(model, ids), SPEC)
    assert_agree(stats_of(model, ids, CaptureSettings(row_stats=SPEC)), expected)
    assert shapes[:2] == [model.config.num_key_value_heads, model.config.num_attention_heads]
