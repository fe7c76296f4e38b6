"""Tiny random models of many families, saved as folders a user could give: config, weights, tokenizer.

Each is built from a config (no network): two layers, 32-64 wide, a word-level tokenizer built here
with the ``tokenizers`` library, or an image processor for vision models.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

VOCAB = 128
PAD, UNK, BOS, EOS, MASK, CLS, SEP = "<pad>", "<unk>", "<s>", "</s>", "<mask>", "[CLS]", "[SEP]"
SPECIALS = (PAD, UNK, BOS, EOS, MASK, CLS, SEP)
WORDS = [
    "the",
    "a",
    "an",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "and",
    "ran",
    "to",
    "house",
    "it",
    "was",
    "happy",
    "when",
    "she",
    "he",
    "they",
    "we",
    "you",
    "saw",
    "bird",
    "tree",
    "big",
    "small",
    "red",
    "blue",
    "green",
    "old",
    "new",
    "day",
    "night",
    "sun",
    "moon",
    "is",
    "are",
    "be",
    "of",
    "in",
    "at",
    "by",
    "for",
    "with",
    "from",
    "this",
    "that",
    "then",
    "there",
    "here",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "because",
    "but",
    "or",
    "not",
    "so",
    "very",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "while",
    "watches",
    "warm",
    "window",
    "book",
    "read",
    "write",
    "city",
    "river",
    ".",
    ",",
    "!",
    "?",
    "'",
    '"',
]
WORDS = tuple(WORDS)
IDS = dict(pad_token_id=0, bos_token_id=2, eos_token_id=3)
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
DECODER = dict(**SMALL, num_key_value_heads=2, max_position_embeddings=128, **IDS)
SEQ2SEQ = dict(
    d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
    encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128, decoder_start_token_id=2, **IDS,
)  # fmt: skip
VISION = dict(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=64)  # fmt: skip


@dataclass(frozen=True)
class Family:
    """One family: how to build its tiny model and what kind txviz should see."""

    name: str  # as the table shows it
    config: str  # transformers config class
    model: str  # transformers model class
    kind: str  # encoder, decoder, encoder-decoder, vision
    sizes: dict = field(default_factory=dict)
    note: str = ""  # what this family tests


FAMILIES = (
    Family("GPT-2", "GPT2Config", "GPT2LMHeadModel", "decoder",
           dict(n_embd=32, n_layer=2, n_head=4, n_positions=128, **IDS)),
    Family("Llama", "LlamaConfig", "LlamaForCausalLM", "decoder", DECODER),
    Family("Mistral", "MistralConfig", "MistralForCausalLM", "decoder", dict(DECODER, sliding_window=4),
           "sliding window"),
    Family("Qwen3", "Qwen3Config", "Qwen3ForCausalLM", "decoder", dict(DECODER, head_dim=8), "q/k norms"),
    Family("Gemma 2", "Gemma2Config", "Gemma2ForCausalLM", "decoder",
           dict(DECODER, head_dim=8, sliding_window=4, attn_logit_softcapping=5.0, final_logit_softcapping=3.0),
           "soft-capping, sliding window"),
    Family("Gemma 3 (text)", "Gemma3TextConfig", "Gemma3ForCausalLM", "decoder",
           dict(DECODER, head_dim=8, sliding_window=4, sliding_window_pattern=2), "sliding window, q/k norms"),
    Family("Phi-3", "Phi3Config", "Phi3ForCausalLM", "decoder", dict(DECODER, pad_token_id=0)),
    Family("OLMo 2", "Olmo2Config", "Olmo2ForCausalLM", "decoder", DECODER),
    Family("GPT-NeoX", "GPTNeoXConfig", "GPTNeoXForCausalLM", "decoder",
           dict(SMALL, max_position_embeddings=128, **IDS)),
    Family("OPT", "OPTConfig", "OPTForCausalLM", "decoder",
           dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64, word_embed_proj_dim=32,
                max_position_embeddings=128, **IDS)),
    Family("gpt-oss", "GptOssConfig", "GptOssForCausalLM", "decoder",
           dict(DECODER, head_dim=8, num_local_experts=4, num_experts_per_tok=2, sliding_window=4,
                layer_types=["sliding_attention", "full_attention"]), "attention sinks"),
    Family("Mixtral", "MixtralConfig", "MixtralForCausalLM", "decoder",
           dict(DECODER, num_local_experts=4, num_experts_per_tok=2), "mixture of experts"),
    Family("Qwen2-MoE", "Qwen2MoeConfig", "Qwen2MoeForCausalLM", "decoder",
           dict(DECODER, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                shared_expert_intermediate_size=32), "mixture of experts, shared expert"),
    Family("Qwen3-MoE", "Qwen3MoeConfig", "Qwen3MoeForCausalLM", "decoder",
           dict(DECODER, head_dim=8, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
           "mixture of experts, q/k norms"),
    Family("Falcon", "FalconConfig", "FalconForCausalLM", "decoder",
           dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, **IDS), "own attention"),
    Family("GPT-J", "GPTJConfig", "GPTJForCausalLM", "decoder",
           dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=128, **IDS), "own attention"),
    Family("Bloom", "BloomConfig", "BloomForCausalLM", "decoder",
           dict(hidden_size=32, n_layer=2, n_head=4, **IDS), "ALiBi, own attention"),
    Family("BERT", "BertConfig", "BertModel", "encoder", dict(SMALL, max_position_embeddings=128, **IDS)),
    Family("ModernBERT", "ModernBertConfig", "ModernBertModel", "encoder",
           dict(SMALL, max_position_embeddings=128, global_attn_every_n_layers=2, local_attention=4, **IDS,
                cls_token_id=5, sep_token_id=6), "local and global layers, a dropout-kernel switch"),
    Family("ALBERT", "AlbertConfig", "AlbertModel", "encoder",
           dict(SMALL, embedding_size=16, max_position_embeddings=128, **IDS), "one shared layer"),
    Family("MPNet", "MPNetConfig", "MPNetModel", "encoder",
           dict(SMALL, max_position_embeddings=130, **IDS), "relative position bias, own attention"),
    Family("DeBERTa-v2", "DebertaV2Config", "DebertaV2Model", "encoder",
           dict(SMALL, max_position_embeddings=128, relative_attention=True, position_buckets=16,
                pos_att_type=["p2c", "c2p"], **IDS), "disentangled attention, own attention"),
    Family("T5", "T5Config", "T5ForConditionalGeneration", "encoder-decoder",
           dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, pad_token_id=0, eos_token_id=3,
                decoder_start_token_id=0), "position bias"),
    Family("BART", "BartConfig", "BartForConditionalGeneration", "encoder-decoder", SEQ2SEQ),
    Family("Marian", "MarianConfig", "MarianMTModel", "encoder-decoder", dict(SEQ2SEQ, decoder_start_token_id=0)),
    Family("ViT", "ViTConfig", "ViTForImageClassification", "vision", dict(VISION, num_labels=3)),
    Family("DINOv2", "Dinov2Config", "Dinov2Model", "vision", dict(VISION, mlp_ratio=2)),
    Family("BEiT", "BeitConfig", "BeitModel", "vision", dict(VISION, use_relative_position_bias=True),
           "relative position bias"),
)  # fmt: skip
BY_NAME = {f.name: f for f in FAMILIES}


def tokenizer():
    """A word-level fast tokenizer over WORDS, with the usual special tokens (VOCAB ids at most)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS + WORDS)}
    assert len(vocab) <= VOCAB
    core = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, unk_token=UNK, bos_token=BOS, eos_token=EOS,
        mask_token=MASK, cls_token=CLS, sep_token=SEP, model_max_length=128,
    )  # fmt: skip


def build(family: Family, seed: int = 0) -> torch.nn.Module:
    """The family's tiny random model, seeded, float32, eval mode (eager attention)."""
    import transformers as tf

    sizes = dict(family.sizes)
    if family.kind != "vision":
        sizes["vocab_size"] = VOCAB
    config = getattr(tf, family.config)(**sizes)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = getattr(tf, family.model)(config).eval()
    with torch.no_grad():  # random weights as big as real ones: make every difference visible
        for name, p in model.named_parameters():
            if "norm" in name.lower() and p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


def save(family: Family, folder: Path, seed: int = 0) -> Path:
    """Write the family's tiny model to ``folder`` with its tokenizer or image processor."""
    folder = Path(folder)
    model = build(family, seed)
    model.save_pretrained(folder)
    if family.kind == "vision":
        from transformers import ViTImageProcessor

        size = family.sizes["image_size"]
        ViTImageProcessor(size={"height": size, "width": size}).save_pretrained(folder)
    else:
        tokenizer().save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    config.pop("_attn_implementation", None)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


def folders(root: Path, names=None) -> dict[str, Path]:
    """Every family (or the named ones) saved under ``root``, reusing folders already there."""
    out = {}
    for family in FAMILIES:
        if names is not None and family.name not in names:
            continue
        folder = Path(root) / family.name.lower().replace(" ", "-").replace("(", "").replace(")", "")
        if not (folder / "config.json").exists():
            save(family, folder)
        out[family.name] = folder
    return out
