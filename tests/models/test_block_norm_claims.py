"""The Transformer Block page's claim about post-LN, on MiniLM: the stream's norm stays approximately
constant, near sqrt(d) times the LayerNorm gain's scale, and not exactly."""

from __future__ import annotations

import math

import torch


def test_post_ln_stream_norm_is_near_sqrt_d_times_the_gain_not_fixed(minilm):
    enc = minilm.tokenizer(
        "The animal didn't cross the street because it was too tired.", return_tensors="pt"
    )
    with torch.no_grad():
        states = minilm.model(**enc, output_hidden_states=True).hidden_states
    d = states[0].shape[-1]
    norms, ratios = [], []
    for layer, h in enumerate(states[1:]):
        gain = minilm.model.encoder.layer[layer].output.LayerNorm.weight
        norm = h[0].norm(dim=-1).mean().item()
        norms.append(norm)
        ratios.append(norm / (math.sqrt(d) * gain.pow(2).mean().sqrt().item()))
    assert all(0.5 < r < 1.5 for r in ratios), ratios  # approximately sqrt(d) x the gain's RMS
    assert max(norms) / min(norms) > 1.05, norms  # but not exactly constant
