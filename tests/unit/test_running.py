"""The one run helper: records and outputs from a single pass, equal to the model's own."""

import pytest
import torch
from tiny_models import tiny_model

from txviz.core.capture import CaptureSettings
from txviz.core.running import run


def tiny_llama():
    return tiny_model("llama", 50, hidden_size=16, intermediate_size=32, max_position_embeddings=64)


def tiny_bert():
    return tiny_model("bert", 50, hidden_size=16, num_attention_heads=2, intermediate_size=32)


def test_one_pass_gives_records_and_the_logits_the_model_gives():
    model, ids = tiny_llama(), torch.tensor([[1, 5, 7, 9, 3]])
    calls = []
    model.register_forward_pre_hook(lambda module, args: calls.append(1))
    result = run(model, CaptureSettings(record={"weights"}), ("logits",), input_ids=ids)
    assert len(calls) == 1
    assert result.recorder.stack("weights").shape == (2, 4, 5, 5) and result.hidden is None
    with torch.no_grad():
        torch.testing.assert_close(result.logits, model(input_ids=ids).logits, atol=1e-5, rtol=1e-5)


def test_hidden_state_of_an_encoder_and_of_a_head_model():
    bert, ids = tiny_bert(), torch.tensor([[2, 4, 6, 8]])
    result = run(bert, outputs=("hidden",), input_ids=ids)
    with torch.no_grad():
        torch.testing.assert_close(result.hidden, bert(input_ids=ids).last_hidden_state)
    assert not result.recorder.records  # nothing asked, nothing kept (the fast path)
    llama = tiny_llama()
    with pytest.raises(ValueError, match="output_hidden_states"):
        run(llama, outputs=("hidden",), input_ids=ids)
    both = run(llama, outputs=("hidden", "logits"), input_ids=ids, output_hidden_states=True)
    assert both.hidden.shape == (1, 4, 16) and both.logits.shape == (1, 4, 50)
    with pytest.raises(ValueError, match="Cannot return"):
        run(llama, outputs=("attentions",), input_ids=ids)
