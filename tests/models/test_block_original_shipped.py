"""MiniLM's and SmolLM2's shapes read from their configs: the formula counts the loaded models' own weights."""

from __future__ import annotations

from txviz.block import original


def test_the_formula_counts_minilm_and_smollm2_as_loaded(minilm, smollm2):
    for name, loaded in (("minilm", minilm), ("smollm2", smollm2)):
        shapes, counted = original.packaged(name)
        assert original.total(shapes) == counted == original.count(loaded.model), name
    minilm_shapes, _ = original.packaged("minilm")
    smol_shapes, _ = original.packaged("smollm2")
    assert (minilm_shapes.encoder_layers, minilm_shapes.d_model, minilm_shapes.heads, minilm_shapes.d_ff) == (
        6,
        384,
        12,
        1536,
    )
    assert (smol_shapes.decoder_layers, smol_shapes.d_model, smol_shapes.heads, smol_shapes.kv_heads) == (
        30,
        576,
        9,
        3,
    )
    assert smol_shapes.output == "tied" and smol_shapes.ffn == "SwiGLU" and minilm_shapes.output == "none"
