"""A folder a user gives that txviz cannot use: each a clear ModelLoadError, never a traceback."""

from __future__ import annotations

import json

import pytest

from txviz import models
from txviz.core.loaded import ModelLoadError
from txviz.families import zoo

pytestmark = pytest.mark.families


@pytest.fixture
def llama(tmp_path):
    return zoo.folders(tmp_path, {"Llama"})["Llama"]


def _config(folder, **changes):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


def test_a_config_without_weights(llama):
    (llama / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="no weights"):
        models.load(str(llama), "cpu")


def test_weights_that_do_not_match_the_config(llama):
    _config(llama, hidden_size=64, intermediate_size=128)
    with pytest.raises(ModelLoadError, match="do not match"):
        models.load(str(llama), "cpu")


def test_a_tokenizer_larger_than_the_embedding(llama):
    from safetensors.torch import load_file, save_file

    weights = load_file(llama / "model.safetensors")
    weights = {k: v[:64] if "embed_tokens" in k or "lm_head" in k else v for k, v in weights.items()}
    save_file(weights, llama / "model.safetensors", metadata={"format": "pt"})
    _config(llama, vocab_size=64)
    with pytest.raises(ModelLoadError, match="embedding has only 64 rows"):
        models.load(str(llama), "cpu")


def test_a_model_with_no_attention(tmp_path):
    import transformers as tf

    tf.ResNetModel(
        tf.ResNetConfig(hidden_sizes=[8, 8, 8, 8], embedding_size=8, depths=[1, 1, 1, 1])
    ).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError, match="no attention heads"):
        models.load(str(tmp_path), "cpu")


def test_a_remote_code_model(llama):
    _config(llama, model_type="my_own_llama", auto_map={"AutoConfig": "configuration.MyConfig"})
    with pytest.raises(ModelLoadError, match="trust_remote_code"):
        models.load(str(llama), "cpu")


def test_a_config_of_an_unknown_family(llama):
    _config(llama, model_type="no_such_family")
    with pytest.raises(ModelLoadError, match="does not know"):
        models.load(str(llama), "cpu")
