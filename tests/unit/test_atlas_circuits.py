"""The atlas's circuit scores against the full vocabulary-sized matrices, built from the modules directly."""

import numpy as np
import pytest
import torch
import transformers as tf
from tiny_models import tiny_config, tiny_model

from txviz.atlas import circuits


def _random_gains(model, seed: int = 1) -> None:
    """Norm gains away from 1, so a gain left out or folded twice changes the scores."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if "Norm" in type(module).__name__ and getattr(module, "weight", None) is not None:
                module.weight.copy_(0.5 + torch.rand(module.weight.shape, generator=generator))


def _full(w_e, w_in, w_out, w_u) -> np.ndarray:
    """Every eigenvalue of the V x V matrix W_E W_in W_out W_U."""
    return np.linalg.eigvals((w_e @ w_in @ w_out @ w_u).numpy())


def test_the_scores_of_known_spectra():
    assert circuits.copying_score(np.array([1.0, 2.0, -1.0])) == pytest.approx(0.5)
    assert circuits.positive_share(np.array([1.0, 2.0, -1.0])) == pytest.approx(0.75)
    pair = np.array([1 + 1j, 1 - 1j])  # a rotation-and-scale: |eig| = sqrt 2 each
    assert circuits.copying_score(pair) == pytest.approx(1 / np.sqrt(2))
    assert np.isnan(circuits.copying_score(np.zeros(3)))


def test_llama_with_shared_key_heads_matches_the_full_matrices():
    model = tiny_model("llama")  # 4 query heads share 2 key-value heads; untied unembedding
    _random_gains(model)
    found = circuits.circuits(model)
    d = model.config.hidden_size
    heads, kv = model.config.num_attention_heads, model.config.num_key_value_heads
    dh = d // heads
    w_e = model.model.embed_tokens.weight.detach().double()
    w_u = (model.model.norm.weight[:, None] * model.lm_head.weight.T).detach().double()
    for layer, block in enumerate(model.model.layers):
        g = block.input_layernorm.weight.detach().double()[:, None]
        attn = block.self_attn
        for head in range(heads):
            shared = head // (heads // kv)
            w_q = g * attn.q_proj.weight.detach().double().T[:, head * dh : (head + 1) * dh]
            w_k = g * attn.k_proj.weight.detach().double().T[:, shared * dh : (shared + 1) * dh]
            w_v = g * attn.v_proj.weight.detach().double().T[:, shared * dh : (shared + 1) * dh]
            w_o = attn.o_proj.weight.detach().double().T[head * dh : (head + 1) * dh]
            ov = _full(w_e, w_v, w_o, w_u)
            qk = _full(w_e, w_q, w_k.T, w_e.T)
            assert found.ov_copying[layer, head] == pytest.approx(circuits.copying_score(ov), abs=1e-5)
            assert found.ov_positive[layer, head] == pytest.approx(circuits.positive_share(ov), abs=1e-5)
            assert found.qk_copying[layer, head] == pytest.approx(circuits.copying_score(qk), abs=1e-5)
    assert not found.notice and np.isfinite(found.ov_copying).all()
    assert np.ptp(found.ov_copying) > 0.01  # random heads differ: a constant would pass the loop


def test_gpt2_tied_and_fused_matches_the_full_matrices():
    model = tiny_model("gpt2")
    _random_gains(model, 2)
    found = circuits.circuits(model)
    d, heads = model.config.n_embd, model.config.n_head
    dh = d // heads
    w_e = model.transformer.wte.weight.detach().double()
    w_u = model.transformer.ln_f.weight.detach().double()[:, None] * w_e.T  # tied
    for layer, block in enumerate(model.transformer.h):
        g = block.ln_1.weight.detach().double()[:, None]
        fused = g * block.attn.c_attn.weight.detach().double()  # Conv1D: (D, 3D), q | k | v
        w_proj = block.attn.c_proj.weight.detach().double()  # (D, D), rows = heads side by side
        for head in range(heads):
            cols = slice(head * dh, (head + 1) * dh)
            w_q, w_k = fused[:, :d][:, cols], fused[:, d : 2 * d][:, cols]
            w_v, w_o = fused[:, 2 * d :][:, cols], w_proj[cols]
            ov = _full(w_e, w_v, w_o, w_u)
            qk = _full(w_e, w_q, w_k.T, w_e.T)
            assert found.ov_copying[layer, head] == pytest.approx(circuits.copying_score(ov), abs=1e-5)
            assert found.qk_copying[layer, head] == pytest.approx(circuits.copying_score(qk), abs=1e-5)


def test_an_encoder_without_an_unembedding_has_qk_scores_only():
    found = circuits.circuits(tiny_model("bert"))
    assert np.isnan(found.ov_copying).all() and np.isfinite(found.qk_copying).all()
    assert "no unembedding" in found.notice


def test_an_encoder_with_a_masked_lm_head_reads_its_decoder():
    torch.manual_seed(0)
    model = tf.BertForMaskedLM(tiny_config("bert")).eval()
    found = circuits.circuits(model)
    assert not found.notice and np.isfinite(found.ov_copying).all()
    d, heads = model.config.hidden_size, model.config.num_attention_heads
    dh = d // heads
    w_e = model.bert.embeddings.word_embeddings.weight.detach().double()
    w_u = model.cls.predictions.decoder.weight.detach().double().T
    attn = model.bert.encoder.layer[1].attention
    cols = slice(2 * dh, 3 * dh)
    w_v = attn.self.value.weight.detach().double().T[:, cols]
    w_o = attn.output.dense.weight.detach().double().T[cols]
    expected = circuits.copying_score(_full(w_e, w_v, w_o, w_u))
    assert found.ov_copying[1, 2] == pytest.approx(expected, abs=1e-5)


def test_a_head_that_copies_scores_one():
    model = tiny_model("gpt2")
    d, dh = model.config.n_embd, model.config.n_embd // model.config.n_head
    with torch.no_grad():  # layer 0 head 0: W_V W_O = P (a projection), so M = W_E P W_E^T is >= 0
        block = model.transformer.h[0]
        basis = torch.linalg.qr(torch.randn(d, dh))[0]
        block.attn.c_attn.weight[:, 2 * d : 2 * d + dh] = basis / block.ln_1.weight[:, None]
        block.attn.c_proj.weight[:dh] = basis.T / model.transformer.ln_f.weight[None, :]
    found = circuits.circuits(model)
    assert found.ov_copying[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert found.ov_positive[0, 0] == pytest.approx(1.0, abs=1e-6)


def test_a_model_with_per_head_fused_projections_is_refused_with_a_message():
    model = tiny_model("gpt2")
    from dataclasses import replace

    from txviz.core import layouts

    layout = layouts.cached_layout(model)
    record = replace(layout.record, attention=replace(layout.record.attention, qkv_per_head=True))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(circuits, "cached_layout", lambda m: replace(layout, record=record))
        with pytest.raises(circuits.UserError, match="head by head"):
            circuits.circuits(model)
