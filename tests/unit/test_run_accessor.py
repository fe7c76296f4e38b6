"""One accessor by the model map's names: run["weights", 3], run["head_out", 3, 7], run["ffn", 3]..."""

import copy

import pytest
import torch
from tiny_models import tiny_model

from txviz.core.capture import CaptureSettings
from txviz.core.layouts import cached_layout
from txviz.core.running import NotRecorded, run

IDS = torch.tensor([[1, 5, 7, 9, 3, 11]])
EVERYTHING = CaptureSettings(
    record={"weights", "queries", "keys", "values", "head_out"},
    stages={"attn", "ffn", "resid", "embed", "final_norm"},
)


def tiny_llama():
    return tiny_model("llama", 50, hidden_size=16, intermediate_size=32, max_position_embeddings=64)


def test_attention_items_by_layer_and_head_equal_the_records_and_the_model():
    model = tiny_llama()
    got = run(model, EVERYTHING, ("output",), input_ids=IDS)
    reference = copy.deepcopy(model)
    reference.set_attn_implementation("eager")  # transformers' own attention, not txviz's
    with torch.no_grad():
        eager = reference(input_ids=IDS, output_attentions=True)
    for layer in range(2):
        torch.testing.assert_close(got["weights", layer], eager.attentions[layer].float(), atol=1e-5, rtol=0)
        torch.testing.assert_close(got["weights", "decoder", layer], got["weights", layer])
    heads = got.attention["decoder.1.attn"][-1].head_out
    torch.testing.assert_close(got["head_out", 1, 3], heads[:, 3])
    assert got["head_out", 1].shape == (1, 4, 6, 4)
    with pytest.raises(ValueError, match="head_out"):  # one spelling of the place: not "heads"
        CaptureSettings(record={"heads"})


def test_values_are_the_value_projection_of_the_normed_stream_by_hand():
    """Recorded values equal v_proj(input_layernorm(stream)), heads of a KV group repeated (GQA)."""
    model = tiny_llama()
    got = run(model, EVERYTHING, input_ids=IDS)
    block = model.model.layers[1]
    with torch.no_grad():
        stream = got["resid", 0]  # the stream entering block 1
        v = block.self_attn.v_proj(block.input_layernorm(stream))  # (B, T, H_kv * D)
    v = v.view(1, 6, 2, 4).transpose(1, 2).repeat_interleave(2, dim=1)  # (B, H, T, D)
    torch.testing.assert_close(got["values", 1], v, atol=1e-5, rtol=0)
    assert got["values", 1, 3].shape == (1, 6, 4)


def test_stage_items_are_the_stream_as_hidden_states_give_it():
    model = tiny_llama()
    got = run(model, EVERYTHING, ("hidden_states",), input_ids=IDS)
    torch.testing.assert_close(got["embed"], got.hidden_states[0].cpu())
    torch.testing.assert_close(got["resid", 0], got.hidden_states[1].cpu())
    torch.testing.assert_close(got["ffn", 1], got.stage_output("ffn", 1))
    assert got["final_norm"].shape == (1, 6, 16)


def test_one_device_and_dtype_rule_for_every_record():
    """Every record the accessor hands out is float32 on the CPU, whatever the model's dtype."""
    model = tiny_llama().to(torch.bfloat16)
    got = run(model, EVERYTHING, ("logits",), input_ids=IDS)
    for key in (("weights", 0), ("values", 1), ("head_out", 0, 1), ("ffn", 1), ("resid", 0), ("embed",)):
        value = got[key]
        assert (value.dtype, value.device.type) == (torch.float32, "cpu"), key
    assert got.logits.dtype == torch.float32


def test_two_stacks_take_the_stack_first_and_cross_attention_by_keyword():
    model = tiny_model("bart", 50)
    ids = torch.tensor([[0, 5, 7, 9, 2]])
    got = run(model, CaptureSettings(record={"weights"}), input_ids=ids, decoder_input_ids=ids[:, :3])
    assert got["weights", "encoder", 1].shape == (1, 4, 5, 5)
    assert got["weights", "decoder", 1].shape == (1, 4, 3, 3)
    assert got["weights", 1].shape == (1, 4, 3, 3)  # the stack that makes the output
    assert got.get("weights", 0, stack="decoder", cross=True).shape == (1, 4, 3, 5)
    assert cached_layout(model).last_stack == "decoder"


def test_what_was_not_recorded_is_refused_by_name():
    got = run(tiny_llama(), CaptureSettings(record={"weights"}), input_ids=IDS)
    with pytest.raises(NotRecorded, match=r"values of decoder.0.attn: record 'values'"):
        got["values", 0]
    with pytest.raises(NotRecorded, match="decoder.1.ffn"):
        got["ffn", 1]
    with pytest.raises(ValueError, match="Unknown item"):
        got["logits", 0]
