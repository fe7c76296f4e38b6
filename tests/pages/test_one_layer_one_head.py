"""Every page with a layer or head picker runs on a model with one layer and one head.

A slider cannot span a single value (Streamlit refuses min == max), so these pages used to crash on
such a model; the shared picker shows a caption instead. The models are random, built from configs.
"""

import shutil

import pytest
import torch
import transformers as tf
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from txviz.app.ui import OTHER_MODEL
from txviz.models.registry import ASSET_MODELS, minilm_folder, smollm2_folder

ONLY_ONE = ("Layer 0 (the only one)", "Head 0 (the only one)")


@pytest.fixture(scope="module")
def one_head_bert(tmp_path_factory):
    """A one-layer, one-head BERT with MiniLM's tokenizer, saved as a folder."""
    folder = tmp_path_factory.mktemp("bert-1x1")
    tokenizer = tf.AutoTokenizer.from_pretrained(minilm_folder())
    torch.manual_seed(0)
    config = tf.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=32,
    )
    tf.BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def one_head_vit(tmp_path_factory):
    """digits-vit's shape and image processor with one layer and one head, random weights."""
    folder = tmp_path_factory.mktemp("vit-1x1")
    config = tf.AutoConfig.from_pretrained(ASSET_MODELS / "digits-vit")
    config.num_hidden_layers, config.num_attention_heads = 1, 1
    torch.manual_seed(0)
    tf.ViTForImageClassification(config).save_pretrained(folder)
    shutil.copy(ASSET_MODELS / "digits-vit" / "preprocessor_config.json", folder)
    return str(folder)


def run(page: str, model_key: str, folder: str, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=300)
    at.session_state[model_key] = OTHER_MODEL
    at.session_state[f"{model_key}_custom"] = folder
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def assert_runs(at: AppTest, captions: tuple[str, ...] = ONLY_ONE) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    shown = [c.value for c in at.caption]
    for caption in captions:
        assert caption in shown, shown


@pytest.mark.parametrize(
    "page, state",
    [
        ("2_Attention_Explorer.py", {}),
        ("2_Attention_Explorer.py", {"view": "All heads"}),
        ("2_Attention_Explorer.py", {"view": "Token focus"}),
        ("2_Attention_Explorer.py", {"view": "Aggregates"}),
        ("5_Masking_Patterns.py", {"view": "On a real model"}),
        ("7_Soft_vs_Hard.py", {}),
        ("17_Query_Key_Space.py", {}),
        ("17_Query_Key_Space.py", {"qk_view": "Every head of a layer"}),
        ("16_Head_Detectors.py", {"rep_n": 1, "rep_len": 4}),
    ],
)
def test_pages_on_a_one_layer_one_head_encoder(one_head_bert, page, state):
    captions = () if page.startswith("16") else ONLY_ONE  # number boxes there: 0 to 0 is fine
    assert_runs(run(page, "model", one_head_bert, **state), captions)


def test_self_attention_real_model_tab(one_head_bert):
    assert_runs(run("1_Self_Attention.py", "real_model", one_head_bert, view="On a real model"))


@pytest.mark.parametrize("view", ["Data flow", "One block"])
def test_transformer_block(one_head_bert, view):
    at = run("11_Transformer_Block.py", "model", one_head_bert, block_view=view)
    captions = ONLY_ONE[:1] + (
        ("Head (for the per-head arrays) 0 (the only one)",) if view == "One block" else ()
    )
    assert_runs(at, captions)


def test_vision_transformer(one_head_vit):
    assert_runs(run("10_Vision_Transformer.py", "vision_model", one_head_vit), ONLY_ONE[:1])


@pytest.fixture(scope="module")
def one_head_bart(tmp_path_factory):
    """date-bart's shape and tokenizer with one layer and one head in each stack, random weights."""
    folder = tmp_path_factory.mktemp("bart-1x1")
    source = ASSET_MODELS / "date-bart"
    config = tf.AutoConfig.from_pretrained(source)
    config.encoder_layers = config.decoder_layers = 1
    config.encoder_attention_heads = config.decoder_attention_heads = 1
    torch.manual_seed(0)
    tf.AutoModelForSeq2SeqLM.from_config(config).save_pretrained(folder)
    tf.AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize("view", ["Decoding step by step", "Cross-attention arithmetic"])
def test_encoder_decoder(one_head_bart, view):
    assert_runs(run("9_Encoder_Decoder.py", "model", one_head_bart, view=view, max_steps=3))


@pytest.fixture(scope="module")
def one_head_llama(tmp_path_factory):
    """A one-layer, one-head Llama with SmolLM2's tokenizer, random weights."""
    folder = tmp_path_factory.mktemp("llama-1x1")
    tokenizer = tf.AutoTokenizer.from_pretrained(smollm2_folder())
    torch.manual_seed(0)
    config = tf.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        intermediate_size=32,
        max_position_embeddings=128,
    )
    tf.LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_live_generation_steers_after_the_only_layer(one_head_llama):
    at = run("8_Live_Generation.py", "gen_model", one_head_llama, gen_steer=True, gen_max=3, gen_chat=False)
    assert_runs(at, ("Add after layer 0 (the only one)",))
    at.button(key="gen_go").click().run()
    assert_runs(at, ("Add after layer 0 (the only one)",))
    steered = at.session_state["generation"]["steered"]
    assert steered["label"].endswith("after layer 0") and len(steered["steps"]) == 3
