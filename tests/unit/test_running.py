"""The front door: records and outputs from a single pass, and interventions against hand computations."""

import threading

import pytest
import torch
from tiny_models import tiny_model

from txviz.core.capture import PLAIN, CaptureSettings, capture
from txviz.core.edits import Ablate, InterventionError, Knockout, Patch, Steer
from txviz.core.running import generate, run, run_module, step

IDS = torch.tensor([[1, 5, 7, 9, 3, 11]])
OTHER = torch.tensor([[2, 8, 4, 6, 10, 12]])
# the output projection of each family: its input is every head's output side by side
O_PROJ = {"llama": "model.layers.{}.self_attn.o_proj", "bert": "encoder.layer.{}.attention.output.dense"}


def tiny_llama():
    return tiny_model("llama", 50, hidden_size=16, intermediate_size=32, max_position_embeddings=64)


def tiny_bert():
    return tiny_model("bert", 50, hidden_size=16, num_attention_heads=2, intermediate_size=32)


def logits(model, settings=PLAIN, ids=IDS):
    """The logits, or the last hidden state of a model without a head."""
    return run(model, settings, ("output",), input_ids=ids).output[0]


def test_one_pass_gives_records_and_the_logits_the_model_gives():
    model = tiny_llama()
    calls = []
    model.register_forward_pre_hook(lambda module, args: calls.append(1))
    result = run(model, CaptureSettings(record={"weights"}), ("logits",), input_ids=IDS)
    assert len(calls) == 1
    assert result.stack("weights").shape == (2, 4, 6, 6) and result.hidden is None and result.output is None
    with torch.no_grad():
        torch.testing.assert_close(result.logits, model(input_ids=IDS).logits, atol=1e-5, rtol=1e-5)


def test_hidden_state_of_an_encoder_and_of_a_head_model():
    bert = tiny_bert()
    result = run(bert, outputs=("hidden",), input_ids=IDS)
    with torch.no_grad():
        torch.testing.assert_close(result.hidden, bert(input_ids=IDS).last_hidden_state)
    assert not result.attention  # nothing asked, nothing kept (the fast path)
    llama = tiny_llama()
    both = run(llama, outputs=("hidden", "logits", "hidden_states"), input_ids=IDS)
    assert (
        both.hidden.shape == (1, 6, 16) and both.logits.shape == (1, 6, 50) and len(both.hidden_states) == 3
    )
    with pytest.raises(ValueError, match="Cannot return"):
        run(llama, outputs=("attentions",), input_ids=IDS)


def test_grad_true_keeps_autograd_and_the_default_does_not():
    model = tiny_llama()
    embeds = model.get_input_embeddings()(IDS).detach().requires_grad_()
    result = run(model, outputs=("logits",), grad=True, inputs_embeds=embeds)
    result.logits[0, -1].max().backward()
    assert embeds.grad is not None and embeds.grad.abs().sum() > 0
    assert not run(model, outputs=("logits",), inputs_embeds=embeds).logits.requires_grad


def test_stages_record_the_stream_as_hidden_states_give_it():
    model = tiny_bert()
    result = run(
        model, CaptureSettings(stages={"embed", "resid", "attn", "ffn"}), ("hidden_states",), input_ids=IDS
    )
    states = result.hidden_states
    torch.testing.assert_close(result.stage_output("embed"), states[0])
    for layer in range(2):
        torch.testing.assert_close(result.stage_output("resid", layer), states[layer + 1])
    assert result.stage("encoder.1.ffn").input.shape == (1, 6, 32)  # the FFN's hidden activations
    with pytest.raises(InterventionError, match="did not record"):
        result.stage_output("cross", 0)


def _o_proj_input(model, family, layer, edit=None):
    """Logits and the o_proj input of ``layer``, with ``edit`` applied to it by a pre-hook (by hand)."""
    module = model.get_submodule(O_PROJ[family].format(layer))
    seen = []

    def hook(mod, args):
        x = args[0].clone() if edit is None else edit(args[0].clone())
        seen.append(x)
        return (x,)

    handle = module.register_forward_pre_hook(hook)
    try:
        out = logits(model)
    finally:
        handle.remove()
    return out, seen[0]


@pytest.mark.parametrize("family", ["llama", "bert"])
@pytest.mark.parametrize("record", [frozenset(), frozenset({"weights"})])  # SDPA fast path, explicit path
def test_ablating_a_head_equals_zeroing_its_slice_of_the_output_projection_input(family, record):
    model = (
        tiny_llama() if family == "llama" else tiny_model("bert", 50, hidden_size=16, num_attention_heads=4)
    )
    d_head = 16 // 4

    def zero_head_2(x):
        x[..., 2 * d_head : 3 * d_head] = 0
        return x

    expected, _ = _o_proj_input(model, family, 1, zero_head_2)
    got = logits(model, CaptureSettings(record=record, interventions=[Ablate("head_out", 1, head=2)]))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(got, logits(model), atol=1e-4)
    # the recorded heads are that input, head by head
    plain, o_input = _o_proj_input(model, family, 0)
    heads = run(model, CaptureSettings(record={"head_out"}), input_ids=IDS).head_output(0)  # (B, H, T, D)
    torch.testing.assert_close(heads.transpose(1, 2).reshape(1, 6, 16), o_input, atol=1e-6, rtol=1e-6)


def test_ablating_a_head_at_chosen_positions_only():
    model = tiny_llama()

    def zero_head_1_at_3(x):
        x[:, 3, 4:8] = 0
        return x

    expected, _ = _o_proj_input(model, "llama", 0, zero_head_1_at_3)
    got = logits(model, CaptureSettings(interventions=[Ablate("head_out", 0, head=1, positions=[3])]))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got[:, :3], logits(model)[:, :3])  # causal: earlier tokens unchanged


def test_patching_clean_into_clean_changes_nothing():
    model = tiny_llama()
    clean = run(
        model,
        CaptureSettings(record={"head_out"}, stages={"ffn", "resid", "attn", "embed"}),
        ("logits",),
        input_ids=IDS,
    )
    patches = [
        Patch("head_out", 0, head=3, value=clean.head_output(0, 3)),
        Patch("ffn", 1, value=clean.stage_output("ffn", 1)),
        Patch("attn", 0, value=clean.stage_output("attn", 0)),
        Patch("resid", 0, value=clean.stage_output("resid", 0), positions=[1, 4]),
        Patch("embed", value=clean.stage_output("embed")),
    ]
    torch.testing.assert_close(logits(model, CaptureSettings(interventions=patches)), clean.logits)


@pytest.mark.parametrize("layer", [0, 1])
def test_patching_the_whole_residual_stream_from_the_clean_run_gives_the_clean_logits(layer):
    model = tiny_llama()
    clean = run(model, CaptureSettings(stages={"resid"}), ("logits",), input_ids=IDS)
    corrupted = logits(model, ids=OTHER)
    assert not torch.allclose(corrupted, clean.logits, atol=1e-3)
    patch = Patch("resid", layer, value=clean.stage_output("resid", layer))
    torch.testing.assert_close(logits(model, CaptureSettings(interventions=[patch]), OTHER), clean.logits)
    # a head patched from the other run moves the logits toward it, and only from its layer on
    other = run(model, CaptureSettings(record={"head_out"}), input_ids=OTHER)
    partly = logits(
        model, CaptureSettings(interventions=[Patch("head_out", 1, head=0, value=other.head_output(1, 0))])
    )
    assert not torch.allclose(partly, clean.logits, atol=1e-4)


def test_steering_with_strength_zero_is_the_plain_run_and_otherwise_adds_the_vector():
    model = tiny_llama()
    vector = torch.randn(16)
    zero = Steer("resid", 0, vector=vector, strength=0.0)
    torch.testing.assert_close(logits(model, CaptureSettings(interventions=[zero])), logits(model))
    # by hand: add 2 * vector to the FFN output of block 1 at position 2
    mlp = model.get_submodule("model.layers.1.mlp")

    def add(module, args, output):
        output = output.clone()
        output[:, 2] += 2 * vector
        return output

    handle = mlp.register_forward_hook(add)
    try:
        expected = logits(model)
    finally:
        handle.remove()
    steer = Steer("ffn", 1, vector=vector, strength=2.0, positions=[2])
    torch.testing.assert_close(logits(model, CaptureSettings(interventions=[steer])), expected)


def test_ablating_the_ffn_equals_the_block_without_it():
    model = tiny_bert()
    dense = model.get_submodule("encoder.layer.0.output.dense")
    handle = dense.register_forward_hook(lambda m, a, out: torch.zeros_like(out))
    try:
        expected = run(model, outputs=("hidden",), input_ids=IDS).hidden
    finally:
        handle.remove()
    got = run(model, CaptureSettings(interventions=[Ablate("ffn", 0)]), ("hidden",), input_ids=IDS).hidden
    torch.testing.assert_close(got, expected)


def test_knockout_cuts_one_edge_in_the_chosen_layer_only():
    model = tiny_bert()
    knock = Knockout(edges=[(4, 1)], layers=[1])
    result = run(model, CaptureSettings(record={"weights"}, interventions=[knock]), input_ids=IDS)
    weights = result.stack("weights")  # (L, H, Q, K)
    assert (weights[1, :, 4, 1] == 0).all() and (weights[0, :, 4, 1] > 0).all()
    torch.testing.assert_close(torch.from_numpy(weights[1].sum(-1)), torch.ones(2, 6))
    # on every layer it is the global extra mask; the fast path (nothing recorded) agrees
    everywhere = Knockout(edges=[(4, 1)], layers=[0, 1])
    mask = torch.ones(6, 6, dtype=torch.bool)
    mask[4, 1] = False
    torch.testing.assert_close(
        logits_of_encoder(model, CaptureSettings(interventions=[everywhere])),
        logits_of_encoder(model, CaptureSettings(extra_mask=mask)),
    )


def logits_of_encoder(model, settings):
    return run(model, settings, ("hidden",), input_ids=IDS).hidden


def test_mistakes_are_refused_with_a_message():
    model = tiny_llama()
    with pytest.raises(InterventionError, match="no head 7"):
        logits(model, CaptureSettings(interventions=[Ablate("head_out", 0, head=7)]))
    with pytest.raises(InterventionError, match="no layer 5"):
        logits(model, CaptureSettings(interventions=[Ablate("ffn", 5)]))
    with pytest.raises(InterventionError, match="outside"):
        logits(model, CaptureSettings(interventions=[Ablate("resid", 0, positions=[9])]))
    with pytest.raises(InterventionError, match="shape"):
        logits(model, CaptureSettings(interventions=[Patch("resid", 0, value=torch.zeros(3, 16))]))
    with pytest.raises(InterventionError, match="head_out. only"):
        Ablate("ffn", 0, head=1)
    with pytest.raises(InterventionError, match="Cannot change"):
        Ablate("neuron", 0)
    with pytest.raises(InterventionError, match="Cannot change"):  # one spelling: "head_out"
        Ablate("head", 0, head=1)
    with pytest.raises(ValueError, match="Cannot record the stage"):
        CaptureSettings(stages={"mlp_in"})


def test_concurrent_runs_with_different_interventions_each_get_their_own_result():
    model = tiny_llama()
    settings = {
        "head": CaptureSettings(interventions=[Ablate("head_out", 1, head=0)]),
        "steer": CaptureSettings(interventions=[Steer("resid", 0, vector=torch.ones(16), strength=3.0)]),
        "plain": CaptureSettings(record={"weights"}),
    }
    alone = {name: logits(model, s) for name, s in settings.items()}
    together, barrier = {}, threading.Barrier(len(settings))

    def work(name):
        barrier.wait()
        together[name] = [logits(model, settings[name]) for _ in range(20)]

    threads = [threading.Thread(target=work, args=(name,)) for name in settings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name, results in together.items():
        for result in results:
            torch.testing.assert_close(result, alone[name])
    assert not torch.allclose(alone["head"], alone["steer"])


def test_a_step_with_a_cache_equals_the_full_pass_and_generate_goes_through_settings():
    from transformers import DynamicCache

    model = tiny_llama()
    cache = DynamicCache(config=model.config)
    first = step(model, input_ids=IDS[:, :-1], past_key_values=cache)
    second = step(model, input_ids=IDS[:, -1:], past_key_values=first.output.past_key_values)
    torch.testing.assert_close(second.logits[:, -1], logits(model)[:, -1], atol=1e-5, rtol=1e-5)
    plain = generate(model, input_ids=IDS, max_new_tokens=3, do_sample=False)
    ablated = generate(
        model, CaptureSettings(interventions=[Steer("resid", 1, vector=torch.ones(16), strength=50.0)]),
        input_ids=IDS, max_new_tokens=3, do_sample=False,
    )  # fmt: skip
    assert plain.shape == (1, 9) and not torch.equal(plain, ablated)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_last_logits_are_the_last_row_of_the_logits(family):
    model = tiny_llama() if family == "llama" else tiny_model("gpt2", 50)
    full = run(model, outputs=("logits",), input_ids=IDS.repeat(2, 1)).logits
    last = run(model, outputs=("last_logits",), input_ids=IDS.repeat(2, 1)).logits
    assert last.shape == (2, 1, full.shape[-1])
    torch.testing.assert_close(last, full[:, -1:], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="not both"):
        run(model, outputs=("logits", "last_logits"), input_ids=IDS)


def test_last_logits_ask_the_model_for_one_row_where_it_can():
    model = tiny_llama()
    seen = []
    handle = model.lm_head.register_forward_hook(lambda m, args, out: seen.append(args[0].shape[1]))
    try:
        run(model, outputs=("last_logits",), input_ids=IDS)
        run(model, outputs=("logits",), input_ids=IDS)
    finally:
        handle.remove()
    assert seen == [1, IDS.shape[1]]


def test_run_module_runs_a_piece_plain_inside_a_capture_in_progress():
    model = tiny_llama()
    block, h = model.model.layers[0], torch.randn(1, 3, 16)
    rotary = run_module(model.model.rotary_emb, h, torch.arange(3)[None])
    alone = run_module(block, h, position_embeddings=rotary)
    # the caller's capture zeroes block 0's output; a piece run through run_module does not see it
    with capture(model, CaptureSettings(interventions=(Ablate("resid", 0),))):
        inside = run_module(block, h, position_embeddings=rotary)
        direct = block(h, position_embeddings=rotary)
    first = lambda out: out[0] if isinstance(out, tuple) else out  # noqa: E731
    assert first(direct).abs().max() == 0 and first(alone).abs().max() > 0
    torch.testing.assert_close(first(inside), first(alone))
    table = model.get_input_embeddings()
    torch.testing.assert_close(run_module(table, IDS), table.weight[IDS])
    assert not run_module(table, IDS).requires_grad and run_module(table, IDS, grad=True).requires_grad
