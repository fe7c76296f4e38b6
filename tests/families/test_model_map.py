"""Head edits on families the model map places, checked against the eager model edited by hand; discovery."""

from __future__ import annotations

import copy

import pytest
import torch

from txviz.core import model_map
from txviz.core.capture import CaptureSettings, use_capture
from txviz.core.edits import Ablate, InterventionError, Patch
from txviz.core.layouts import UnknownLayoutError, layout_of
from txviz.core.running import run
from txviz.families import zoo

pytestmark = pytest.mark.families

NEW = ("Phi-3", "GPT-NeoX", "OPT", "Gemma 2", "Mixtral", "Qwen3-MoE")
IDS = torch.tensor([[5, 9, 12, 7, 30, 41, 8, 5, 9]])
TOL = 1e-5


def _pair(name: str):
    """(the model through txviz's attention function, the same weights with eager attention)."""
    eager = zoo.build(zoo.BY_NAME[name])
    return use_capture(copy.deepcopy(eager)), eager


def _by_hand(eager, o_path: str, layer: int, head: int, width: int, value=None) -> torch.Tensor:
    """The eager model's logits with one head's slice of its output projection's input replaced by hand."""
    projection = eager.get_submodule(f"{o_path.format(layer=layer)}")

    def hook(module, args):
        x = args[0].clone()
        x[..., head * width : (head + 1) * width] = 0 if value is None else value
        return (x, *args[1:])

    handle = projection.register_forward_pre_hook(hook)
    try:
        with torch.no_grad():
            return eager(input_ids=IDS).logits
    finally:
        handle.remove()


def _o_path(model) -> str:
    layout = layout_of(model)
    return f"{layout.stacks[-1].path}.{{layer}}.{layout.record.attention.o}"


@pytest.mark.parametrize("name", NEW)
def test_head_ablation_equals_zeroing_its_slice_by_hand(name):
    ours, eager = _pair(name)
    width = ours.config.hidden_size // ours.config.num_attention_heads
    width = getattr(ours.config, "head_dim", None) or width
    edited = run(
        ours, CaptureSettings(interventions=[Ablate("head_out", 1, head=2)]), ("logits",), input_ids=IDS
    )
    plain = run(ours, outputs=("logits",), input_ids=IDS)
    expected = _by_hand(eager, _o_path(ours), 1, 2, width)
    torch.testing.assert_close(edited.logits, expected, atol=TOL, rtol=0)
    assert (edited.logits - plain.logits).abs().max() > 1e-4, (
        "the ablation changed nothing: the test proves nothing"
    )
    other_head = _by_hand(eager, _o_path(ours), 1, 1, width)
    assert (edited.logits - other_head).abs().max() > 1e-4, "another head's ablation gives the same numbers"


@pytest.mark.parametrize("name", ("Phi-3", "GPT-NeoX", "OPT"))
def test_head_patch_equals_writing_its_slice_by_hand(name):
    ours, eager = _pair(name)
    width = (
        getattr(ours.config, "head_dim", None) or ours.config.hidden_size // ours.config.num_attention_heads
    )
    value = torch.randn(width, generator=torch.Generator().manual_seed(1))
    settings = CaptureSettings(interventions=[Patch("head_out", 0, head=3, value=value)])
    edited = run(ours, settings, ("logits",), input_ids=IDS)
    torch.testing.assert_close(
        edited.logits, _by_hand(eager, _o_path(ours), 0, 3, width, value), atol=TOL, rtol=0
    )


def test_a_model_with_no_record_has_its_heads_discovered(monkeypatch):
    """Qwen3 with its record removed: the probe finds self_attn in every block, and head edits work."""
    monkeypatch.delitem(model_map.BY_MODEL_TYPE, "qwen3")
    ours, eager = _pair("Qwen3")
    layout = layout_of(ours)
    assert (layout.record, layout.attention, layout.family) == (None, "self_attn", "generic")
    assert layout.attention_name("decoder", 1) == "model.layers.1.self_attn"
    edited = run(
        ours, CaptureSettings(interventions=[Ablate("head_out", 1, head=0)]), ("logits",), input_ids=IDS
    )
    expected = _by_hand(eager, "model.layers.{layer}.self_attn.o_proj", 1, 0, ours.config.head_dim)
    torch.testing.assert_close(edited.logits, expected, atol=TOL, rtol=0)
    with pytest.raises(UnknownLayoutError, match="feed-forward network adds"):
        layout.point_name("ffn", "decoder", 0)
    assert layout.point_name("resid", "decoder", 1) == "decoder.1.resid"


def test_discovery_names_what_it_cannot_place(monkeypatch):
    """A model that computes attention in its own code: the refusal says so, naming the heads."""
    monkeypatch.delitem(model_map.BY_MODEL_TYPE, "qwen3")
    eager = zoo.build(zoo.BY_NAME["Qwen3"])  # eager attention: never calls txviz's attention function
    layout = layout_of(eager)
    assert layout.attention is None and "own code" in layout.missing
    with pytest.raises(UnknownLayoutError, match="cannot place the heads .* own code"):
        layout.attention_name("decoder", 0)


def test_every_record_places_its_family():
    """Each record's paths exist in its family's tiny model (the zoo builds one per model type)."""
    built = {}
    for family in zoo.FAMILIES:
        if family.kind in ("decoder", "encoder", "encoder-decoder"):
            built.setdefault(getattr(__import__("transformers"), family.config)().model_type, family)
    placed = [t for t in model_map.BY_MODEL_TYPE if t in built]
    assert len(placed) >= 14
    for model_type in placed:
        layout = layout_of(zoo.build(built[model_type]))
        assert layout.record is model_map.BY_MODEL_TYPE[model_type]
        assert layout.form in ("pre-norm", "post-LN", "parallel", "sandwich", "post-norm")


def test_a_layer_out_of_range_is_refused():
    ours, _ = _pair("OPT")
    with pytest.raises(InterventionError, match="layers 0 to 1"):
        run(ours, CaptureSettings(interventions=[Ablate("head_out", 2, head=0)]), input_ids=IDS)


@pytest.mark.parametrize("name", ("T5", "Marian", "OPT", "Gemma 2"))
def test_the_lens_last_row_is_the_models_own_distribution(tmp_path, name):
    """The lens reads the last stream as the model does (T5 scales it before its tied head)."""
    from txviz import models
    from txviz.block.lens import logit_lens
    from txviz.block.recording import run_text

    loaded = models.load(str(zoo.folders(tmp_path, {name})[name]), "cpu")
    block = run_text(loaded, "the cat sat on the mat and the dog ran")
    lens = logit_lens(loaded, block)
    torch.testing.assert_close(
        torch.tensor(lens.top_probs[-1]), torch.tensor(block.top_probs), atol=1e-5, rtol=0
    )


def test_discovery_reuses_the_load_probe_instead_of_running_the_model_again(tmp_path, monkeypatch):
    from txviz import models
    from txviz.core.layouts import cached_layout

    monkeypatch.delitem(model_map.BY_MODEL_TYPE, "qwen3")
    loaded = models.load(str(zoo.folders(tmp_path, {"Qwen3"})["Qwen3"]), "cpu")
    calls = []
    loaded.model.register_forward_pre_hook(lambda module, args: calls.append(1))
    layout = cached_layout(loaded.model)
    assert layout.attention == "self_attn" and not calls


ADDING = [f.name for f in zoo.FAMILIES if f.kind == "decoder" and f.name not in ("Falcon", "GPT-J", "Bloom")]


@pytest.mark.parametrize("name", ADDING)
def test_what_attention_and_the_ffn_add_sums_to_the_next_stream(name):
    """The map's 'attn' and 'ffn' points are what each block adds: stream before + both = stream after."""
    ours, _ = _pair(name)
    got = run(ours, CaptureSettings(stages={"attn", "ffn", "resid", "embed"}), input_ids=IDS)
    before = got["embed"]
    for layer in range(2):
        after = got["resid", layer]
        torch.testing.assert_close(before + got["attn", layer] + got["ffn", layer], after, atol=1e-5, rtol=0)
        before = after
