"""The block as code on every pre-norm decoder variant equals the model's own block, and each written-out
part matters: leaving it out moves the numbers."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from txviz.block import prenorm
from txviz.block.opened import _rotary, open_block
from txviz.block.recording import run_text
from txviz.block.weights import block_weights
from txviz.core.capture import use_capture
from txviz.core.errors import UserError
from txviz.families import zoo
from txviz.models import LoadedModel

TEXT = "the cat sat on the mat and the dog ran to the house . the cat sat on the mat"
WRITTEN_OUT = (
    "Llama", "Mistral", "Qwen3", "Gemma 2", "Gemma 3 (text)", "Phi-3", "OLMo 2", "GPT-NeoX", "OPT", "Mixtral",
    "Qwen2-MoE", "Qwen3-MoE",
)  # fmt: skip
TOL = 1e-5  # float32: the same sums in another order


@pytest.fixture(scope="module", params=WRITTEN_OUT)
def family_run(request):
    return _run(request.param)


def _run(name: str, **sizes):
    """The family's tiny model (its config's ``sizes`` changed) run through the front door on TEXT."""
    family = zoo.BY_NAME[name]
    model = use_capture(zoo.build(dataclasses.replace(family, sizes={**family.sizes, **sizes})))
    loaded = LoadedModel(name, "decoder", model, zoo.tokenizer(), None, "cpu")
    return name, loaded, run_text(loaded, TEXT)


def test_every_block_as_code_equals_the_models_own(family_run):
    name, loaded, run = family_run
    for layer in range(run.stack().n_layers):
        opened = open_block(loaded, run, "decoder", layer)
        assert opened.max_difference <= TOL * max(1.0, opened.scale), (name, layer, opened.max_difference)
        assert opened.scale > 0.01  # the block's output is not trivially small


LINES = {
    "Gemma 2": ("Z = X + PostNorm(MultiHeadAttn(Norm(X)))", "E = Z + PostNorm(FeedForward(Norm(Z)))"),
    "OLMo 2": ("Z = X + PostNorm(MultiHeadAttn(X))", "E = Z + PostNorm(FeedForward(Z))"),
    "GPT-NeoX": ("E = X + MultiHeadAttn(Norm₁(X)) + FeedForward(Norm₂(X))",),
    "Qwen3": prenorm.LINES,
}


@pytest.mark.parametrize("name", sorted(LINES))
def test_the_listing_names_the_variants_norms(name):
    _, loaded, run = _run(name)
    opened = open_block(loaded, run, "decoder", 0)
    assert opened.lines == LINES[name]
    codes = {s.name: s.code for s in opened.steps}
    if name == "Qwen3":
        assert "RMSNorm per head" in codes["Q"] and "RMSNorm per head" in codes["K"]
    if name == "Gemma 2":  # soft-capping and the sliding window of its first layer, written in the listing
        assert "5 · tanh(" in codes["A"] and "last 4 keys only" in codes["A"]


def _difference(loaded, run, layer: int, **changes) -> float:
    """max |block output| difference when the written-out block leaves out a part of its attention or block."""
    layout, model = run.layout, loaded.model
    weights = block_weights(layout, model, "decoder", layer)
    attention = {
        k: v for k, v in changes.items() if k in {f.name for f in dataclasses.fields(weights.attention)}
    }
    block = {k: v for k, v in changes.items() if k not in attention}
    weights = dataclasses.replace(
        weights, attention=dataclasses.replace(weights.attention, **attention), **block
    )
    x = torch.tensor(run.stack().hidden[layer])
    rotary = _rotary(model, layout, x.shape[0], layer) if weights.attention.rotary else None
    e, _ = prenorm.pre_norm_block(x, weights, rotary)
    return float((e - torch.tensor(run.stack().hidden[layer + 1])).abs().max())


SOFT = {"attn_logit_softcapping": 0.01}  # the tiny model's scores are small: a cap that bites


@pytest.mark.parametrize(
    ("name", "layer", "change"),
    [
        ("Gemma 2", 0, {"softcap": None}),
        ("Gemma 2", 0, {"window": None}),
        ("Mistral", 0, {"window": None}),
        ("Qwen3", 0, {"q_norm": None, "k_norm": None}),
        ("OLMo 2", 0, {"q_norm": None, "k_norm": None}),
        ("Gemma 3 (text)", 1, {"attn_out_norm": None}),
        ("OLMo 2", 1, {"ffn_out_norm": None}),
        ("GPT-NeoX", 0, {"parallel": False}),
    ],
)
def test_each_written_out_part_matters(name, layer, change):
    _, loaded, run = _run(name, **(SOFT if "softcap" in change else {}))
    exact = _difference(loaded, run, layer)
    assert exact <= TOL
    moved = _difference(loaded, run, layer, **change)
    assert moved > max(1e-4, 100 * exact), (
        f"{name}: leaving out {change} moved the output by {moved:.2g} only"
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [("gpt-oss", "mixture of experts"), ("Falcon", "computes attention in its own code")],
)
def test_blocks_it_cannot_write_out_are_refused_with_the_reason(name, reason):
    model = zoo.build(zoo.BY_NAME[name])
    if name != "Falcon":  # Falcon keeps transformers' eager attention: txviz reads it from the output
        model = use_capture(model)
    loaded = LoadedModel(name, "decoder", model, zoo.tokenizer(), None, "cpu")
    run = run_text(loaded, TEXT)
    with pytest.raises(UserError, match=reason):
        open_block(loaded, run, "decoder", 0)


@pytest.mark.parametrize(
    ("name", "change"),
    [("Mixtral", {"renormalize": False}), ("Qwen2-MoE", {"shared": None}), ("Mixtral", {"top_k": 1})],
)
def test_each_part_of_a_mixture_of_experts_matters(name, change):
    """The router's top-k, the rescaling of the chosen experts' weights and the shared expert all count."""
    _, loaded, run = _run(name)
    weights = block_weights(run.layout, loaded.model, "decoder", 0)
    changed = dataclasses.replace(weights, feed_forward=dataclasses.replace(weights.feed_forward, **change))
    x = torch.tensor(run.stack().hidden[0])
    rotary = _rotary(loaded.model, run.layout, x.shape[0], 0)
    expected = torch.tensor(run.stack().hidden[1])
    exact = float((prenorm.pre_norm_block(x, weights, rotary)[0] - expected).abs().max())
    moved = float((prenorm.pre_norm_block(x, changed, rotary)[0] - expected).abs().max())
    assert exact <= TOL and moved > max(1e-4, 100 * exact), (name, change, exact, moved)
