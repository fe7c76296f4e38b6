"""The block as code against real models, the residual stream, LayerNorm vs BatchNorm, the logit lens."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers as tf

from txviz import models
from txviz.block import norms
from txviz.block.lens import NoLensError, check_lens, logit_lens
from txviz.block.opened import open_block
from txviz.block.recording import STAGES, run_text
from txviz.block.residual import residual_norms
from txviz.core import capture, stages
from txviz.core.capture import CaptureSettings, prepared
from txviz.core.errors import UserError
from txviz.core.layouts import UnknownLayoutError, layout_of
from txviz.models import LoadedModel

TEXT = "The cat sat on the mat because it was warm."


@pytest.fixture(scope="module")
def minilm_run(minilm):
    return run_text(minilm, TEXT, STAGES)


@pytest.fixture(scope="module")
def smollm2_run(smollm2):
    return run_text(smollm2, "The capital of France is", STAGES)


def test_post_ln_code_equals_minilm_every_layer(minilm, minilm_run):
    assert minilm_run.layout.form == "post-LN" and minilm_run.stack().n_layers == 6
    for layer in range(6):
        opened = open_block(minilm, minilm_run, "encoder", layer)
        assert opened.max_difference <= 1e-5, layer
        # the code's sub-block outputs equal what the hooks recorded inside the model
        np.testing.assert_allclose(opened.step("MHA(X)").value, minilm_run.stack().attn[layer], atol=1e-5)
        np.testing.assert_allclose(opened.step("H").value, minilm_run.stack().ffn_hidden[layer], atol=1e-5)
    shapes = {s.name: s.shape for s in opened.steps}
    assert shapes["Q"] == (12, 13, 32) and shapes["A"] == (12, 13, 13) and shapes["H"] == (13, 1536)
    assert shapes["W_o"] == (384, 384) and shapes["mean of S"] == (13,)


def test_pre_norm_code_equals_smollm2_every_layer(smollm2, smollm2_run):
    data = smollm2_run.stack("decoder")
    assert smollm2_run.layout.form == "pre-norm" and data.n_layers == 30
    for layer in range(30):
        opened = open_block(smollm2, smollm2_run, "decoder", layer)
        # the stream reaches ~2e4 in a few "massive activation" features: compare relative to it
        assert opened.max_difference <= 1e-6 * max(opened.scale, 1.0) + 1e-5, layer
        if layer in (0, 29):  # the code's FFN activations are what the model's down_proj received
            np.testing.assert_allclose(opened.step("H").value, data.ffn_hidden[layer], rtol=1e-4, atol=1e-3)
    shapes = {s.name: s.shape for s in opened.steps}
    assert shapes["Q"] == (9, 5, 64) and shapes["K"] == (3, 5, 64)  # GQA: 3 KV heads for 9 query heads
    assert shapes["H"] == (5, 1536) and "rms of X" in shapes


def test_pre_norm_stream_is_a_running_sum(smollm2_run):
    data = smollm2_run.stack("decoder")
    np.testing.assert_array_equal(data.hidden[:-1] + data.attn + data.ffn, data.hidden[1:])


def test_date_bart_encoder_and_decoder_blocks(date_bart):
    run = run_text(date_bart, "the third of march two thousand", STAGES)
    assert [s.name for s in run.stacks] == ["encoder", "decoder"]
    assert run.stack("decoder").cross is not None
    for stack in run.stacks:
        for layer in range(stack.n_layers):
            assert open_block(date_bart, run, stack.name, layer).max_difference <= 1e-5
    lens = logit_lens(date_bart, run)
    np.testing.assert_array_equal(lens.top_ids[-1], run.top_ids)


@pytest.fixture(scope="module")
def date_bart():
    return models.load("date-bart", "cpu")


def _tiny(model, tokenizer, kind: str) -> LoadedModel:
    torch.manual_seed(0)
    return LoadedModel("tiny", kind, capture.use_capture(model.eval()), tokenizer, None, "cpu")


def test_gpt2_style_block_from_a_config(minilm):
    config = tf.GPT2Config(
        n_embd=48, n_layer=3, n_head=4, vocab_size=minilm.tokenizer.vocab_size, n_positions=64
    )
    torch.manual_seed(0)
    loaded = _tiny(tf.GPT2LMHeadModel(config), minilm.tokenizer, "decoder")
    run = run_text(loaded, TEXT, STAGES)
    assert run.layout.family == "gpt2" and run.layout.form == "pre-norm"
    for layer in range(3):
        assert open_block(loaded, run, "decoder", layer).max_difference <= 1e-5
    data = run.stack()
    np.testing.assert_allclose(data.hidden[:-1] + data.attn + data.ffn, data.hidden[1:], atol=1e-6)
    with torch.no_grad():
        logits = loaded.model(input_ids=torch.tensor([data.ids])).logits[0]
    np.testing.assert_array_equal(logit_lens(loaded, run).top_ids[-1], logits.argmax(-1).numpy())


def test_unknown_layout_gets_a_clear_message(minilm):
    config = tf.DistilBertConfig(dim=32, n_layers=1, n_heads=2, hidden_dim=64, vocab_size=100)
    loaded = _tiny(tf.DistilBertModel(config), minilm.tokenizer, "encoder")
    with pytest.raises(UnknownLayoutError, match="cannot write out the block of a 'distilbert' model"):
        run_text(loaded, TEXT)
    # a known type whose block has extra modules is refused too, not computed wrongly
    llama = tf.LlamaForCausalLM(
        tf.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    )
    llama.model.layers[0].pre_feedforward_layernorm = torch.nn.LayerNorm(32)
    with pytest.raises(UnknownLayoutError, match="also has pre_feedforward_layernorm"):
        layout_of(llama)


def test_hooks_are_installed_once_and_idle_outside_a_recorder(smollm2):
    layout = prepared(smollm2.model)
    names = stages.installed(smollm2.model)
    # attn, ffn and the stream after each block; the stream entering block 0; the final norm
    assert len(names) == 3 * 30 + 2 and prepared(smollm2.model) == layout
    assert stages.installed(smollm2.model) == names  # a second call adds nothing
    with torch.no_grad(), capture.capture(smollm2.model, CaptureSettings(stages={"ffn"})) as recorder:
        smollm2.model(input_ids=torch.tensor([[1, 2, 3]]))
    assert set(recorder.stages) == {f"decoder.{i}.ffn" for i in range(30)}
    with torch.no_grad(), capture.capture(smollm2.model, CaptureSettings()) as idle:
        smollm2.model(input_ids=torch.tensor([[1, 2, 3]]))
    assert not idle.stages


def test_concurrent_recorders_keep_their_own_stages(minilm):
    import threading

    prepared(minilm.model)
    ids = torch.tensor([minilm.tokenizer(TEXT)["input_ids"]])
    found, barrier = {}, threading.Barrier(2)

    def record(kind: str) -> None:
        barrier.wait()
        with torch.no_grad(), capture.capture(minilm.model, CaptureSettings(stages={kind})) as recorder:
            for _ in range(3):
                minilm.model(input_ids=ids)
        found[kind] = recorder.stages

    threads = [threading.Thread(target=record, args=(kind,)) for kind in ("attn", "ffn")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for kind in ("attn", "ffn"):
        assert set(found[kind]) == {f"encoder.{i}.{kind}" for i in range(6)}
        assert all(len(calls) == 3 for calls in found[kind].values())


def test_residual_norms(minilm_run):
    sizes = residual_norms(minilm_run.stack())
    data = minilm_run.stack()
    assert sizes.stream.shape == (7, 13) and sizes.attn.shape == sizes.ffn.shape == (6, 13)
    np.testing.assert_allclose(sizes.ffn[2, 3], np.linalg.norm(data.ffn[2, 3]), rtol=1e-6)
    assert set(sizes.per_layer()) == {"attention", "feed-forward", "stream (after the block)"}
    with pytest.raises(UserError, match="needs a run"):
        residual_norms(run_text_plain(minilm_run))


def run_text_plain(run):
    from dataclasses import replace

    return replace(run.stack(), attn=None)


def test_lens_last_row_is_the_models_own_argmax(smollm2, smollm2_run):
    lens = logit_lens(smollm2, smollm2_run)
    ids = torch.tensor([smollm2_run.stack().ids])
    with torch.no_grad():
        logits = smollm2.model(input_ids=ids).logits[0]
    assert lens.top_ids.shape == (31, 5)
    np.testing.assert_array_equal(lens.top_ids[-1], logits.argmax(-1).numpy())
    np.testing.assert_allclose(
        lens.top_probs[-1], torch.softmax(logits, -1).max(-1).values.numpy(), rtol=1e-6
    )
    assert (lens.final_rank[-1] == 0).all() and lens.top_tokens[-1][-1] == "Paris"


def test_an_encoder_has_no_lens(minilm):
    with pytest.raises(NoLensError, match="minilm is an encoder.*Choose a decoder"):
        check_lens(minilm)


def test_batchnorm_depends_on_the_other_sentences_layernorm_does_not(minilm):
    sentences = ["The cat sat on the mat.", "A dog barked.", "Rain fell all night over the town."]
    first = norms.batch_activations(minilm, sentences, layer=2)
    other = norms.batch_activations(minilm, [*sentences[:2], "Completely different words."], layer=2)
    padded = norms.batch_activations(minilm, sentences, layer=2, extra_padding=6)
    assert first.x.shape[:2] == first.mask.shape and first.mask.sum() == sum(len(t) for t in first.tokens)
    for second in (other, padded):
        effect = norms.dependence(first, second, sentence=0)
        assert effect.layer_norm.max() < 1e-4  # float rounding of a different batch shape
        assert effect.batch_norm.max() > 1e-2
    masked = norms.dependence(first, other, sentence=0, exclude_padding=True)
    assert masked.batch_norm.max() > 1e-2  # leaving padding out does not remove the dependence
    # our LayerNorm is the model's own, before its learned scale and shift
    block = minilm.model.encoder.layer[2].attention.output.LayerNorm
    ln, mean, std = norms.layer_norm(first.x)
    expected = block(torch.tensor(first.x)).detach().numpy()
    np.testing.assert_allclose(
        ln * block.weight.detach().numpy() + block.bias.detach().numpy(), expected, rtol=1e-4, atol=1e-4
    )
    bn, bn_mean, _ = norms.batch_norm(first.x)
    np.testing.assert_allclose(bn.reshape(-1, bn.shape[-1]).mean(0), 0, atol=1e-4)
    assert mean.shape == first.mask.shape and bn_mean.shape == (384,)


def test_bad_input(minilm, smollm2):
    with pytest.raises(ValueError, match="empty"):
        run_text(minilm, "   ")
    run = run_text(smollm2, "word " * 10_000)
    assert run.stack().hidden.shape[1] == 256 and "only the first 256" in run.notice
    with pytest.raises(UserError, match="at least two sentences"):
        norms.sentences_of("only one")


def test_cli_lens_npz_and_json(tmp_path, capsys, smollm2):
    from txviz.cli import main

    out = tmp_path / "lens.npz"
    args = ["lens", "--model", "smollm2", "--text", "The capital of France is", "--device", "cpu"]
    assert main([*args, "--out", str(out)]) == 0
    data = np.load(out)
    assert data["top_ids"].shape == data["top_probs"].shape == (31, 5) and data["top_ids"].dtype.kind == "i"
    assert list(data["tokens"]) == ["The", "capital", "of", "France", "is"]
    with torch.no_grad():
        logits = smollm2.model(
            input_ids=torch.tensor([smollm2.tokenizer("The capital of France is")["input_ids"]])
        ).logits
    np.testing.assert_array_equal(data["top_ids"][-1], logits[0].argmax(-1).numpy())
    assert main([*args, "--out", str(tmp_path / "lens.json"), "--format", "json"]) == 0
    assert np.asarray(json.loads((tmp_path / "lens.json").read_text())["top_probs"]).shape == (31, 5)
    assert main(["lens", "--model", "minilm", "--text", "hi", "--device", "cpu"]) == 2
    assert "encoder" in capsys.readouterr().err


def test_figures_take_the_mode_for_sequential_scales_only(smollm2, smollm2_run):
    from txviz.block import figures
    from txviz.block.ops import Step
    from txviz.figures import colors

    result = logit_lens(smollm2, smollm2_run, slice(-3, None))
    attention = Step("A", "A = softmax(S)", np.full((1, 2, 2), 0.5, np.float32), ("head", "query", "key"))
    signed = Step("X", "X", np.eye(2, dtype=np.float32) - 0.5, ("token", "feature"))
    for presenting, sequential in ((False, "viridis"), (True, "cividis")):
        shown = [
            figures.lens_grid(result, presenting=presenting),
            figures.residual_heatmap(np.ones((2, 2)), ("a", "b"), "t", presenting=presenting),
            figures.step_figure(attention, ("a", "b"), n_heads=1, presenting=presenting),
        ]
        for figure in shown:
            assert [c for _, c in figure.data[0].colorscale] == colors.SCALES[sequential]
        diverging = figures.step_figure(signed, ("a", "b"), presenting=presenting).data[0]
        assert [c for _, c in diverging.colorscale] == colors.SCALES["rdbu"] and diverging.zmid == 0
