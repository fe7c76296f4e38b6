"""Image GPT, Entailment and the Transformer Block's position view with the model on a GPU.

On a machine without one the GPU is pretended (tests/fake_gpu.py): a CPU model whose parameters,
buffers and outputs say they live on cuda:0, where `.numpy()` and mixing with CPU tensors fail as
they do on CUDA. Each result is compared with the same model's CPU run. The `cuda` tests repeat
them on a real GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers as tf
from fake_gpu import CUDA, fake_gpu, on_gpu  # noqa: F401  (fake_gpu: a fixture used by name)
from tiny_models import tiny_model
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from txviz.block.dataflow import stage_values
from txviz.block.recording import run_text
from txviz.core.capture import use_capture
from txviz.core.loaded import LoadedModel
from txviz.entailment import contextual
from txviz.entailment.model import DecomposableAttention, probabilities, run_steps
from txviz.entailment.vectors import WordVectors
from txviz.generation.sampling import SamplingSettings
from txviz.imagegpt import drawing

WORDS = ["the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "rug", "and", "was", "not"]
PREMISE, HYPOTHESIS = ("a", "cat", "sat", "on", "the", "mat"), ("the", "cat", "ran")


def word_tokenizer() -> tf.PreTrainedTokenizerFast:
    """A word-level tokenizer of a few words, with BERT's special tokens."""
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer.train_from_iterator([" ".join(WORDS)], trainers.WordLevelTrainer(special_tokens=special))
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]",
    )  # fmt: skip


def pixel_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return use_capture(tf.GPT2LMHeadModel(drawing.make_config(n_embd=16, n_layer=2, n_head=2)).eval())


@pytest.mark.usefixtures("fake_gpu")
def test_the_pretend_gpu_fails_where_cuda_would():
    x = torch.ones(2).to("cuda")
    assert x.device == CUDA and torch.tensor([1.0, 2.0], device="cuda").device == CUDA
    with pytest.raises(TypeError, match="cpu"):
        x.numpy()
    with pytest.raises(RuntimeError, match="same device"):
        x + torch.ones(2)
    layer = on_gpu(torch.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="same device"):
        layer(torch.ones(1, 2))
    assert layer(x[None]).device == CUDA and layer.weight.device == CUDA
    np.testing.assert_array_equal((x * 2).cpu().numpy(), [2.0, 2.0])


def check_image_gpt(model, gpu_model) -> None:
    model, gpu_model = drawing.as_loaded(model), drawing.as_loaded(gpu_model)
    settings = SamplingSettings(temperature=1.0, top_k=5, seed=3)
    cpu_steps = list(drawing.draw(model, 4, settings))
    gpu_steps = list(drawing.draw(gpu_model, 4, settings))
    assert [s.level for s in gpu_steps] == [s.level for s in cpu_steps]
    np.testing.assert_allclose(gpu_steps[-1].attention, cpu_steps[-1].attention, atol=1e-5)
    np.testing.assert_allclose(gpu_steps[-1].before, cpu_steps[-1].before, atol=1e-5)
    digits = [1, None]
    np.testing.assert_array_equal(
        drawing.sample(gpu_model, digits, settings), drawing.sample(model, digits, settings)
    )
    image = cpu_steps[-1].pixels
    assert drawing.image_bits(gpu_model, image, 4) == pytest.approx(
        drawing.image_bits(model, image, 4), rel=1e-4
    )


@pytest.mark.usefixtures("fake_gpu")
def test_image_gpt_draws_samples_and_scores_on_a_gpu():
    model = pixel_model()
    check_image_gpt(model, on_gpu(model))


def check_entailment(cpu: LoadedModel, gpu: LoadedModel) -> None:
    torch.manual_seed(0)
    classifier = DecomposableAttention(d_embed=cpu.model.config.hidden_size).eval()
    on_cpu, on_device = WordVectors.from_loaded(cpu), WordVectors.from_loaded(gpu)
    a, b = on_device(PREMISE), on_device(HYPOTHESIS)
    np.testing.assert_allclose(
        probabilities(classifier, a, b),
        probabilities(classifier, on_cpu(PREMISE), on_cpu(HYPOTHESIS)),
        atol=1e-6,
    )
    assert run_steps(classifier, a, b, PREMISE, HYPOTHESIS).label in (
        "entailment",
        "contradiction",
        "neutral",
    )
    np.testing.assert_allclose(
        contextual.alignment(gpu, PREMISE, HYPOTHESIS).e,
        contextual.alignment(cpu, PREMISE, HYPOTHESIS).e,
        atol=1e-5,
    )


@pytest.mark.usefixtures("fake_gpu")
def test_entailment_reads_gpu_embeddings_into_its_cpu_models():
    tokenizer = word_tokenizer()
    bert = tiny_model("bert", len(tokenizer))
    cpu = LoadedModel("tiny", "encoder", bert, tokenizer, None, "cpu")
    check_entailment(cpu, LoadedModel("tiny", "encoder", on_gpu(bert), tokenizer, None, "cuda"))


KINDS = {"bert": "encoder", "gpt2": "decoder", "llama": "decoder", "bart": "encoder-decoder"}


def check_positions(cpu: LoadedModel, gpu: LoadedModel) -> None:
    run = run_text(cpu, "the cat sat on the mat and the dog ran")
    for stack in run.layout.stacks:
        for key in ("positions", "embedding"):
            expected = stage_values(cpu, run, stack.name, key, 0).matrix
            np.testing.assert_allclose(stage_values(gpu, run, stack.name, key, 0).matrix, expected, atol=1e-6)


@pytest.mark.usefixtures("fake_gpu")
@pytest.mark.parametrize("family", list(KINDS))
def test_block_position_view_on_a_gpu(family):
    tokenizer = word_tokenizer()
    model = tiny_model(family, len(tokenizer))
    cpu = LoadedModel("tiny", KINDS[family], model, tokenizer, None, "cpu")
    check_positions(cpu, LoadedModel("tiny", KINDS[family], on_gpu(model), tokenizer, None, "cuda"))


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.cuda
@needs_cuda
def test_image_gpt_on_a_real_gpu():
    model = pixel_model()
    check_image_gpt(model, pixel_model().to("cuda"))


@pytest.mark.cuda
@needs_cuda
def test_entailment_on_a_real_gpu():
    tokenizer = word_tokenizer()
    bert = tiny_model("bert", len(tokenizer))
    gpu = tiny_model("bert", len(tokenizer)).to("cuda")
    cpu = LoadedModel("tiny", "encoder", bert, tokenizer, None, "cpu")
    check_entailment(cpu, LoadedModel("tiny", "encoder", gpu, tokenizer, None, "cuda"))


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("family", list(KINDS))
def test_block_position_view_on_a_real_gpu(family):
    tokenizer = word_tokenizer()
    cpu = LoadedModel("tiny", KINDS[family], tiny_model(family, len(tokenizer)), tokenizer, None, "cpu")
    gpu_model = tiny_model(family, len(tokenizer)).to("cuda")
    check_positions(cpu, LoadedModel("tiny", KINDS[family], gpu_model, tokenizer, None, "cuda"))
