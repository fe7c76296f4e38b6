"""The model registry: packaged models, local folders, hub ids offline, models without attention."""

import numpy as np
import pytest
import torch
import transformers as tf
from tiny_models import tiny_model

from txviz import models
from txviz.core.tracing import trace_text


def test_available_lists_packaged_models_with_kinds():
    infos = {m.name: m for m in models.available()}
    assert infos["minilm"].kind == "encoder" and infos["minilm"].loadable
    assert infos["smollm2"].kind == "decoder" and infos["smollm2"].loadable
    assert set(models.names(("decoder",))) >= {"smollm2"} and "minilm" not in models.names(("decoder",))


def test_packaged_models_have_the_documented_shape(minilm, smollm2):
    assert (minilm.n_layers, minilm.n_heads, minilm.n_ctx) == (6, 12, 512)
    assert (smollm2.n_layers, smollm2.n_heads) == (30, 9)
    assert smollm2.config.num_key_value_heads == 3
    assert smollm2.model.config._attn_implementation == "txviz"


def test_smollm2_loads_from_its_safetensors_cache_without_converting_again(smollm2, monkeypatch):
    # What "quick" meant: the cached folder is read as it is, never converted from the GGUF again.
    import safetensors.torch

    def converting(*args, **kwargs):
        raise AssertionError("SmolLM2 was converted again although its safetensors cache exists")

    weights = models.cache_dir() / "smollm2-135m-instruct" / "model.safetensors"
    before = weights.stat()
    monkeypatch.setattr(safetensors.torch, "save_model", converting)
    said = []
    again = models.load("smollm2", "cpu", progress=said.append)
    after = weights.stat()
    assert not [line for line in said if "Converting" in line]
    # The same file, untouched: a conversion would write the weights anew.
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert again.model.config._name_or_path == str(weights.parent)
    ids = smollm2.tokenizer("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        logits = again.model(**ids).logits[0, -1]
    assert smollm2.tokenizer.decode(logits.argmax()).strip() == "Paris"


@pytest.mark.parametrize(
    "name, message",
    [
        ("", "No model name"),
        ("not-a-model-anywhere", "cannot be reached"),
        ("org/missing-model", "cannot be reached"),
        ("<script>alert(1)</script>", "neither a known model"),
    ],
)
def test_bad_names_give_a_clear_message(name, message):
    with pytest.raises(models.ModelLoadError, match=message):
        models.load(name, "cpu")


def test_folder_without_a_model(tmp_path):
    with pytest.raises(models.ModelLoadError, match="no config.json"):
        models.load(str(tmp_path), "cpu")


def test_model_without_attention_is_refused(tmp_path):
    tf.ResNetModel(tf.ResNetConfig(embedding_size=8, hidden_sizes=[8, 8], depths=[1, 1])).save_pretrained(
        tmp_path
    )
    with pytest.raises(models.ModelLoadError, match="no attention heads"):
        models.load(str(tmp_path), "cpu")


def test_cuda_on_a_machine_without_it():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(models.ModelLoadError, match="no CUDA"):
        models.load("minilm", "cuda")


def test_local_folder_loads_and_traces(tmp_path, minilm):
    tiny_model("bert", minilm.tokenizer.vocab_size, capture=False).save_pretrained(tmp_path)
    minilm.tokenizer.save_pretrained(tmp_path)
    loaded = models.load(str(tmp_path), "cpu")
    assert loaded.kind == "encoder" and loaded.n_layers == 2
    trace = trace_text(loaded, "a tiny model")
    assert trace.weights.shape == (2, 4, 5, 5)
    np.testing.assert_allclose(trace.weights.sum(-1), 1.0, atol=1e-5)


def test_kind_detection():
    assert models.detect_kind(tf.BartConfig()) == "encoder-decoder"
    assert models.detect_kind(tf.ViTConfig()) == "vision"
    assert models.detect_kind(tf.LlamaConfig(architectures=["LlamaForCausalLM"])) == "decoder"
    assert models.detect_kind(tf.BertConfig()) == "encoder"
