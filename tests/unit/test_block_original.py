"""The original Transformer in numbers: the parameter formula against torch.nn.Transformer part by part,
the ReLU FFN against torch's layer, and the formula from a BERT or Llama config against the model
transformers builds from it."""

from __future__ import annotations

import pytest
import torch
import transformers as tf
from tiny_models import tiny_config
from torch import nn

from txviz.block import original


def test_the_2017_shapes_are_the_papers():
    s = original.ORIGINAL
    assert (s.encoder_layers, s.decoder_layers, s.d_model, s.heads, s.d_head, s.d_ff) == (
        6,
        6,
        512,
        8,
        64,
        2048,
    )
    assert s.heads * s.d_head == s.d_model and s.dropout == 0.1 and s.ffn == "ReLU"
    model = original.torch_transformer()  # built with these shapes: its modules say so
    layer = model.encoder.layers[0]
    assert layer.self_attn.num_heads == 8 and layer.self_attn.embed_dim == 512
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1
    assert len(model.encoder.layers) == len(model.decoder.layers) == 6


def test_the_formula_equals_torch_nn_transformer_for_the_parts_both_have():
    s = original.ORIGINAL
    # 4 (d² + d) attention, 2 d d_ff + d_ff + d FFN, two LayerNorms of 2d: written out by hand
    encoder = 4 * (512 * 512 + 512) + (2 * 512 * 2048 + 2048 + 512) + 2 * 2 * 512
    decoder = 2 * 4 * (512 * 512 + 512) + (2 * 512 * 2048 + 2048 + 512) + 3 * 2 * 512
    assert original.encoder_layer(s) == encoder == 3_152_384
    assert original.decoder_layer(s) == decoder == 4_204_032
    model = nn.Transformer(d_model=512, nhead=8, dim_feedforward=2048, dropout=0.1, device="meta")
    layers = sum(p.numel() for stack in (model.encoder, model.decoder) for p in stack.layers.parameters())
    assert layers == 6 * encoder + 6 * decoder
    norms = sum(p.numel() for p in (*model.encoder.norm.parameters(), *model.decoder.norm.parameters()))
    assert norms == 2 * 2 * 512  # torch's final LayerNorms: the only parameters the formula does not have
    assert sum(p.numel() for p in model.parameters()) == layers + norms
    check = original.torch_check()
    assert check.encoder_layer == (encoder, encoder) and check.decoder_layer == (decoder, decoder)
    assert check.layers == (layers, layers) and check.final_norms == norms
    assert check.torch_total == layers + norms and check.embedding == 37_000 * 512
    # The paper's model: the layers and one shared embedding (tied to the output), no final norms.
    assert original.total(s) == layers + 37_000 * 512 == 63_082_496


def test_the_ffn_is_w2_relu_w1_x_plus_b1_plus_b2_as_torch_computes_it():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, dropout=0.1).eval()
    x = torch.randn(5, 512)
    with torch.no_grad():
        expected = layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))  # torch's _ff_block
        got = original.ffn(
            x, layer.linear1.weight, layer.linear1.bias, layer.linear2.weight, layer.linear2.bias
        )
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
    assert (torch.clamp(x @ layer.linear1.weight.T + layer.linear1.bias, min=0) == 0).any()  # ReLU bites


@pytest.mark.parametrize(
    ("family", "auto", "overrides"),
    [
        ("bert", tf.BertModel, {}),
        ("llama", tf.LlamaForCausalLM, {}),
        ("llama", tf.LlamaForCausalLM, {"tie_word_embeddings": False, "attention_bias": True}),
    ],
)
def test_the_formula_from_a_config_counts_the_model_transformers_builds(family, auto, overrides):
    config = tiny_config(family, **overrides)
    with torch.device("meta"):
        model = auto(config)
    shapes = original.shapes_of("tiny", config)
    assert original.total(shapes) == sum(p.numel() for p in model.parameters())
    if family == "llama":
        assert shapes.kv_heads == 2 < shapes.heads == 4  # grouped-query attention is counted as such


def test_the_table_has_a_column_per_model_and_the_counts():
    s = original.ORIGINAL
    table = original.rows(((s, 123),))
    by_row = {row[""]: row[s.name] for row in table}
    assert by_row["heads"] == "8 of 64" and by_row["d_ff"] == "2048 (4 d)"
    assert by_row["FFN"] == "W2 max(0, W1 x + b1) + b2" and by_row["dropout"] == "0.1"
    assert by_row["parameters (formula)"] == "63,082,496" and by_row["parameters (counted)"] == "123"
