"""Interventions on chosen batch rows: one batched call runs a different intervention in each row."""

import pytest
import torch
from tiny_models import tiny_model

from txviz.core.capture import CaptureSettings
from txviz.core.edits import Ablate, InterventionError, Patch
from txviz.core.running import run

IDS = torch.tensor([[1, 5, 7, 9, 3, 11]])


def logits(model, interventions=(), ids=IDS):
    return run(model, CaptureSettings(interventions=interventions), ("logits",), input_ids=ids).logits


def test_each_row_gets_only_its_own_intervention():
    model = tiny_model("llama", 50, hidden_size=16, intermediate_size=32, max_position_embeddings=64)
    head = Ablate("head_out", layer=0, head=1)
    patch_value = torch.randn(6, 16)
    ffn = Patch("ffn", layer=1, positions=[2], value=patch_value)
    batched = logits(
        model,
        (
            Ablate("head_out", layer=0, head=1, rows=[1]),
            Patch("ffn", layer=1, positions=[2], value=patch_value, rows=[2]),
        ),
        IDS.repeat(3, 1),
    )
    torch.testing.assert_close(batched[0], logits(model)[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(batched[1], logits(model, (head,))[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(batched[2], logits(model, (ffn,))[0], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(batched[1], batched[0], atol=1e-4)


def test_a_row_outside_the_batch_is_refused():
    model = tiny_model("llama", 50, hidden_size=16, intermediate_size=32, max_position_embeddings=64)
    with pytest.raises(InterventionError, match="Rows"):
        logits(model, (Ablate("resid", layer=0, rows=[3]),), IDS.repeat(2, 1))
