"""One builder for the tiny random models tests make from configs: real transformers code, milliseconds."""

from __future__ import annotations

import torch
import transformers as tf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from txviz.core.capture import use_capture

# Words of the tiny word-level tokenizers' texts (one token each)
WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "dogs",
    "ran",
    "past",
    "old",
    "red",
    "barns",
    "near",
    "quiet",
    "rivers",
]

VOCAB = 100

# family -> (model class, config class, sizes): two layers, a few heads, 16 or 32 wide.
FAMILIES = {
    "bert": (
        tf.BertModel,
        tf.BertConfig,
        dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
    ),
    "gpt2": (tf.GPT2LMHeadModel, tf.GPT2Config, dict(n_embd=32, n_layer=2, n_head=4)),
    "llama": (
        tf.LlamaForCausalLM,
        tf.LlamaConfig,
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=64,
        ),
    ),  # fmt: skip
    "bart": (
        tf.BartForConditionalGeneration,
        tf.BartConfig,
        dict(
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
        ),
    ),  # fmt: skip
    "marian": (
        tf.MarianMTModel,
        tf.MarianConfig,
        dict(
            d_model=32,
            encoder_layers=1,
            decoder_layers=3,
            encoder_attention_heads=2,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
        ),
    ),  # fmt: skip
    "deit": (
        lambda config: tf.DeiTModel(config, add_pooling_layer=False),
        tf.DeiTConfig,
        dict(
            image_size=32,
            patch_size=8,
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=32,
        ),
    ),  # fmt: skip
    "dinov2_with_registers": (
        tf.Dinov2WithRegistersModel,
        tf.Dinov2WithRegistersConfig,
        dict(
            image_size=32,
            patch_size=8,
            hidden_size=16,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=32,
            num_register_tokens=3,
            mlp_ratio=2,
        ),
    ),  # fmt: skip
}
VISION = ("deit", "dinov2_with_registers")


def tiny_config(family: str, vocab_size: int = VOCAB, **overrides):
    """The config of a tiny model of ``family``; keyword arguments override its sizes."""
    _, config_class, sizes = FAMILIES[family]
    vocab = {} if family in VISION else {"vocab_size": vocab_size}
    return config_class(**{**sizes, **vocab, **overrides})


def tiny_model(family: str, vocab_size: int = VOCAB, seed: int = 0, capture: bool = True, **overrides):
    """A random tiny model in eval mode, seeded, through the capture attention unless ``capture=False``."""
    model_class = FAMILIES[family][0]
    torch.manual_seed(seed)
    model = model_class(tiny_config(family, vocab_size, **overrides)).eval()
    return use_capture(model) if capture else model


def word_tokenizer(words: list[str]) -> tf.PreTrainedTokenizerFast:
    """One id per word (ids 4 onwards), [CLS] ... [SEP] around every text, [PAD] 0 and [UNK] 1."""
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    )


def byte_bpe(texts: list[str], vocab_size: int = 300, **fast_kwargs) -> tf.PreTrainedTokenizerFast:
    """A byte-level BPE trained on ``texts``; its special tokens are the ``*_token`` arguments."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = [value for name, value in fast_kwargs.items() if name.endswith("_token")]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(texts, trainer)
    return tf.PreTrainedTokenizerFast(tokenizer_object=tok, **fast_kwargs)
