"""Reduced precision: weights as transformers would load them, records float32 and close to float32's."""

import numpy as np
import pytest
import torch
import transformers as tf

from txviz.core.running import run
from txviz.core.tracing import trace_text
from txviz.families import zoo
from txviz.models import ModelLoadError, load, precisions
from txviz.models.loading import reduce_precision

pytestmark = pytest.mark.families
TEXT = "the cat sat on the mat and the dog ran to the park"
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return zoo.folders(tmp_path_factory.mktemp("zoo"), {"Llama", "GPT-2", "T5"})


@pytest.mark.parametrize("family", ["Llama", "GPT-2", "T5"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_weights_are_those_transformers_loads(folders, family, dtype):
    """Parameters, tied weights, buffers and float32 modules (T5's wo in float16) as from_pretrained(dtype)."""
    auto = tf.AutoModelForSeq2SeqLM if family == "T5" else tf.AutoModelForCausalLM
    theirs = auto.from_pretrained(folders[family], dtype=dtype)
    ours = reduce_precision(auto.from_pretrained(folders[family], dtype=torch.float32), dtype)
    for (name, a), (other, b) in zip(
        [*ours.named_parameters(), *ours.named_buffers()],
        [*theirs.named_parameters(), *theirs.named_buffers()],
        strict=True,
    ):
        assert name == other and a.dtype == b.dtype, (name, a.dtype, b.dtype)
        assert torch.equal(a, b), name
    if family == "T5":
        wo = ours.encoder.block[0].layer[1].DenseReluDense.wo.weight
        assert wo.dtype == (torch.float32 if dtype == torch.float16 else dtype)
    if family == "GPT-2":
        assert ours.lm_head.weight is ours.transformer.wte.weight  # still tied


def test_a_bfloat16_model_records_float32_close_to_the_float32_model(folders):
    full = load(str(folders["Llama"]), "cpu")
    half = load(str(folders["Llama"]), "cpu", dtype="bfloat16")
    assert half.dtype == "bfloat16" and full.dtype == "float32"
    assert {p.dtype for p in half.model.parameters()} == {torch.bfloat16}
    assert half.check_gap is not None and half.check_gap <= 1e-4  # the self-check ran in float32
    a = trace_text(full, TEXT, record=("weights", "scores", "queries", "keys"))
    b = trace_text(half, TEXT, record=("weights", "scores", "queries", "keys"))
    for item in ("weights", "scores", "queries", "keys"):
        ours, theirs = getattr(b, item), getattr(a, item)
        assert ours.dtype == np.float32, item
        finite = np.isfinite(theirs)
        assert (np.isfinite(ours) == finite).all()
        scale = np.abs(theirs[finite]).max()
        gap = np.abs(ours[finite] - theirs[finite]).max()
        assert 0 < gap < 0.02 * scale, (item, gap, scale)  # bfloat16 rounding: not equal, but close
    np.testing.assert_allclose(b.weights.sum(-1), 1, atol=1e-5)  # rows still sum to 1


def test_a_bfloat16_model_gives_float32_outputs(folders):
    half = load(str(folders["Llama"]), "cpu", dtype="bfloat16")
    ids = torch.tensor([half.tokenizer(TEXT)["input_ids"]])
    result = run(half.model, outputs=("logits", "hidden", "hidden_states"), input_ids=ids)
    assert result.logits.dtype == result.hidden.dtype == torch.float32
    assert {h.dtype for h in result.hidden_states} == {torch.float32}
    assert result.logits.numpy().shape[-1] == half.model.config.vocab_size  # numpy takes it


def test_precisions_offered_and_refused(folders):
    assert precisions("cpu") == ("float32", "bfloat16")
    assert precisions("cuda") == ("float32", "float16", "bfloat16")
    with pytest.raises(ModelLoadError, match="float16 needs a CUDA GPU"):
        load(str(folders["Llama"]), "cpu", dtype="float16")
    with pytest.raises(ModelLoadError, match="Unknown precision"):
        load(str(folders["Llama"]), "cpu", dtype="int4")


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_reduced_precision_on_a_gpu_records_float32_close_to_float32(folders, dtype):
    full = trace_text(load(str(folders["Llama"]), "cuda"), TEXT)
    half = load(str(folders["Llama"]), "cuda", dtype=dtype)
    assert next(half.model.parameters()).device.type == "cuda"
    reduced = trace_text(half, TEXT)
    assert reduced.weights.dtype == np.float32
    np.testing.assert_allclose(reduced.weights, full.weights, atol=0.02)


def test_the_logit_lens_reads_a_bfloat16_stream(folders):
    from txviz.block.lens import lens_of_text

    half = load(str(folders["Llama"]), "cpu", dtype="bfloat16")
    lens, _ = lens_of_text(half, TEXT)
    ids = torch.tensor([half.tokenizer(TEXT)["input_ids"]])
    own = run(half.model, outputs=("logits",), input_ids=ids).logits[0].argmax(-1).numpy()
    assert (lens.top_ids[-1] == own).all()  # the last row is the model's own output
