"""The model map: one record per model family, naming every part txviz reads, records or changes.

A record says which config ``model_type`` values it covers, where the stacks of blocks are, and
inside one block where the attention (the module that calls the attention function), the
cross-attention, the FFN's input and output projections and the norms are, what the block adds to
the residual stream, the final norm and the output head. Layouts (txviz.core.layouts), stage
points and edits (txviz.core.edits), the block as code (txviz.block.weights) and the data
flow (txviz.block.dataflow) all read these records; nothing else keeps family knowledge.

One module, not one file per family as TransformerLens has: TransformerLens's adapters carry
weight-conversion code, txviz's records are data of about ten lines each, and reading them side by
side is how a new family is written (copy the closest record). A model with no record is placed by
discovery at load (txviz.core.layouts).

Canonical names of places (the one vocabulary of records, stages, edits and ``Run``):
``decoder.3.attn`` (what block 3's self-attention adds to the stream), ``decoder.3.cross``,
``decoder.3.ffn``, ``decoder.3.resid`` (the stream after block 3), ``decoder.3.head_out`` (each
head's output before the output projection), ``decoder.embed`` (the stream entering block 0) and
``final_norm``; ``encoder.`` for an encoder's stack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class AttentionParts:
    """One block's attention, by path inside the block."""

    module: str  # the module that calls the attention function (its heads are edited there)
    o: str  # output projection: its input is the heads side by side
    q: str | None = None
    k: str | None = None
    v: str | None = None
    qkv: str | None = None  # one fused projection instead of q, k, v
    qkv_per_head: bool = False  # fused rows per head [q | k | v] (GPT-NeoX), not all q, all k, all v
    q_norm: str | None = None
    k_norm: str | None = None
    adds: str | None = None  # the module whose output the block adds to the stream; None: ``module``

    @property
    def paths(self) -> tuple[str, ...]:
        parts = (self.module, self.q, self.k, self.v, self.qkv, self.o, self.q_norm, self.k_norm, self.adds)
        return tuple(dict.fromkeys(p for p in parts if p))

    @property
    def added(self) -> str:
        return self.adds or self.module


@dataclass(frozen=True)
class FeedForwardParts:
    """One block's FFN, by path inside the block."""

    module: str  # the whole FFN (a mixture of experts is one module here)
    up: str | None = None  # input projection (None for a mixture of experts)
    down: str | None = None  # output projection: its input is the hidden activations
    gate: str | None = None  # gated FFN: down(act(gate x) * up x)
    gate_up: str | None = None  # gate and up fused in one projection
    experts: bool = False  # a mixture of experts: a router picks a few FFNs per token
    adds: str | None = None  # the module whose output the block adds; None: ``down``, else ``module``

    @property
    def paths(self) -> tuple[str, ...]:
        parts = (self.module, self.up, self.gate, self.gate_up, self.down, self.adds)
        return tuple(dict.fromkeys(p for p in parts if p))

    @property
    def added(self) -> str:
        return self.adds or self.down or self.module

    @property
    def reads_hidden(self) -> bool:
        """True when the added module's input is the FFN's hidden activations (its down projection)."""
        return self.down is not None and self.added == self.down


@dataclass(frozen=True)
class Positions:
    """How the stack sees positions: a learned table, rotary angles inside attention, or nothing here."""

    kind: str  # "learned", "rotary" or "none" (relative biases, ALiBi... inside attention)
    label: str  # the data-flow box
    help: str
    table: str | None = None  # path from the stack's owner (see Record.owner) to the table or rotary module
    offset: str | None = None  # attribute of the table: rows skipped before position 0 (BART)
    frequencies: str | None = None  # rotary: the module's buffer of frequencies theta^(-2j/d)


@dataclass(frozen=True)
class Record:
    """Everything txviz knows about one family's modules."""

    name: str  # shown on the block page: "llama layout"
    model_types: tuple[str, ...]
    stacks: tuple[tuple[str, str], ...]  # (stack name, path from the base model to its ModuleList)
    attention: AttentionParts
    ffn: FeedForwardParts
    norms: tuple[tuple[str, str], ...]  # (role, path in the block): norm1, norm2, norm_cross, post_attn...
    form: str | Callable = "pre-norm"  # "pre-norm", "post-LN", "parallel", "sandwich"; or config -> form
    cross: AttentionParts | None = None  # the decoder stack's cross-attention (encoder-decoder)
    final_norm: str | None = None  # path from the base model
    head: str | None = "lm_head"  # output head, from the top model
    owner: str = "base"  # where token and position tables live: "base" model or the "stack"'s module
    tokens: str | None = None  # token table from the owner; None: the model's input embeddings
    positions: Positions | None = None
    forbidden: tuple[str, ...] = ()  # modules that would change the maths beyond what ``code`` writes
    code: bool = False  # txviz.block.weights writes its blocks out as code
    note: str = ""  # what sets the family apart, for messages
    decoder: tuple[tuple[str, object], ...] = ()  # fields that differ in the decoder stack's blocks (T5)
    head_scale: Callable | None = None  # config -> factor on the final stream before the head, or None
    embeddings: str | None = None  # from the owner: the module that makes the stream entering block 0 (BERT)
    norm_offset: float = 0.0  # an RMSNorm's gain is offset + weight: 1 for Gemma's (1 + weight)
    rms: bool = False  # its norms other than nn.LayerNorm are RMSNorms (no mean, no bias)
    in_out: bool = False  # projections store W as (in, out) and compute x W + b (GPT-2's Conv1D)
    segments: str | None = None  # from the owner: the segment (token type) table added with positions (BERT)
    embedding_norm: str | None = None  # from the owner: the norm after token + position + segment (BERT)

    def in_stack(self, stack: str) -> Record:
        """The record as the blocks of ``stack`` have it."""
        return replace(self, **dict(self.decoder)) if stack == "decoder" and self.decoder else self

    def form_of(self, config) -> str:
        return self.form(config) if callable(self.form) else self.form

    def norm(self, role: str) -> str | None:
        return dict(self.norms).get(role)

    def required(self, cross: bool = False) -> tuple[str, ...]:
        """Every path a block must have: the record names exactly these."""
        paths = self.attention.paths + self.ffn.paths + tuple(p for _, p in self.norms if p)
        if cross and self.cross is not None:
            paths += self.cross.paths
        else:
            paths = tuple(p for p in paths if p != self.norm("norm_cross"))
        return tuple(dict.fromkeys(paths))

    def points(self, cross: bool) -> dict[str, str]:
        """Stage kind -> the hooked module's path in the block (its output is what the block adds)."""
        found = {"attn": self.attention.added, "ffn": self.ffn.added}
        if cross and self.cross is not None:
            found["cross"] = self.cross.added
        return found


ROTARY = Positions(
    "rotary",
    "rotary positions\n(inside attention)",
    "No position vector is added: every block rotates its queries and keys by an angle proportional "
    "to the position (RoPE). Shown: cos of each angle, position x frequency.",
    table="rotary_emb",
    frequencies="inv_freq",
)
LLAMA_ATTENTION = AttentionParts("self_attn", "self_attn.o_proj", "self_attn.q_proj", "self_attn.k_proj",
                                 "self_attn.v_proj")  # fmt: skip
GATED = FeedForwardParts("mlp", "mlp.up_proj", "mlp.down_proj", "mlp.gate_proj")
PRE_NORMS = (("norm1", "input_layernorm"), ("norm2", "post_attention_layernorm"))
DECODER = (("decoder", "layers"),)


def _t5_attention(name: str) -> AttentionParts:
    return AttentionParts(name, f"{name}.o", f"{name}.q", f"{name}.k", f"{name}.v")


def _t5_ffn(index: int) -> FeedForwardParts:
    # T5 v1.0 has wi, v1.1 a gated wi_0 and wi_1: only the output projection is named
    return FeedForwardParts(f"layer.{index}.DenseReluDense", down=f"layer.{index}.DenseReluDense.wo")


def _t5_scale(config) -> float | None:
    """T5 with its output head tied to the embeddings scales the stream by d_model^-0.5 first."""
    return config.d_model**-0.5 if getattr(config, "tie_word_embeddings", True) else None


QK_NORMS = {"q_norm": "self_attn.q_norm", "k_norm": "self_attn.k_norm"}


def _parallel(config) -> str:
    return "parallel" if getattr(config, "use_parallel_residual", True) else "pre-norm"


def _opt_form(config) -> str:
    return "pre-norm" if getattr(config, "do_layer_norm_before", True) else "post-LN"


def _bart_attention(name: str) -> AttentionParts:
    return AttentionParts(name, f"{name}.out_proj", f"{name}.q_proj", f"{name}.k_proj", f"{name}.v_proj")


def _moe(name: str, types: tuple[str, ...], note: str, qk_norm: bool = False) -> Record:
    attention = LLAMA_ATTENTION
    if qk_norm:
        attention = replace(LLAMA_ATTENTION, **QK_NORMS)
    return Record(name, types, DECODER, attention, FeedForwardParts("mlp", experts=True), PRE_NORMS,
                  final_norm="norm", positions=ROTARY, note=note, code=True, rms=True)  # fmt: skip


SANDWICH = (("norm1", "input_layernorm"), ("post_attn", "post_attention_layernorm"),
            ("norm2", "pre_feedforward_layernorm"), ("post_ffn", "post_feedforward_layernorm"))  # fmt: skip


def _gemma(name: str, types: tuple[str, ...], note: str, qk_norm: bool = False) -> Record:
    attention = replace(LLAMA_ATTENTION, adds="post_attention_layernorm", **(QK_NORMS if qk_norm else {}))
    ffn = FeedForwardParts(
        "mlp", "mlp.up_proj", "mlp.down_proj", "mlp.gate_proj", adds="post_feedforward_layernorm"
    )
    return Record(name, types, DECODER, attention, ffn, SANDWICH, form="sandwich", final_norm="norm",
                  positions=ROTARY, note=note, code=True, norm_offset=1.0, rms=True)  # fmt: skip


RECORDS = (
    Record(
        "bert", ("bert", "roberta", "xlm-roberta", "electra"), (("encoder", "encoder.layer"),),
        AttentionParts("attention.self", "attention.output.dense", "attention.self.query",
                       "attention.self.key", "attention.self.value", adds="attention.output.dense"),
        FeedForwardParts("intermediate", "intermediate.dense", "output.dense"),
        (("norm1", "attention.output.LayerNorm"), ("norm2", "output.LayerNorm")),
        form="post-LN", head=None,
        positions=Positions("learned", "+ positions\n+ segment\n→ LayerNorm",
                            "BERT adds a learned vector per position and per segment, then applies LayerNorm.",
                            table="embeddings.position_embeddings"),
        embeddings="embeddings", segments="embeddings.token_type_embeddings",
        embedding_norm="embeddings.LayerNorm", code=True,
    ),
    Record(
        "llama", ("llama", "mistral", "qwen2"), DECODER, LLAMA_ATTENTION, GATED, PRE_NORMS,
        final_norm="norm", positions=ROTARY, rms=True,
        forbidden=("self_attn.q_norm", "self_attn.k_norm", "pre_feedforward_layernorm"), code=True,
    ),
    Record(
        "gpt2", ("gpt2",), (("decoder", "h"),),
        AttentionParts("attn", "attn.c_proj", qkv="attn.c_attn"),
        FeedForwardParts("mlp", "mlp.c_fc", "mlp.c_proj"),
        (("norm1", "ln_1"), ("norm2", "ln_2")),
        final_norm="ln_f",
        positions=Positions("learned", "+ learned positions", "GPT-2 adds a learned vector per position.",
                            table="wpe"),
        in_out=True, code=True,
    ),
    Record(
        "bart", ("bart",), (("encoder", "encoder.layers"), ("decoder", "decoder.layers")),
        _bart_attention("self_attn"), FeedForwardParts("fc1", "fc1", "fc2"),
        (("norm1", "self_attn_layer_norm"), ("norm2", "final_layer_norm"),
         ("norm_cross", "encoder_attn_layer_norm")),
        form="post-LN", cross=_bart_attention("encoder_attn"), owner="stack", tokens="embed_tokens",
        positions=Positions("learned", "+ learned positions\n→ LayerNorm",
                            "BART adds a learned vector per position, then applies LayerNorm.",
                            table="embed_positions", offset="offset"),
        code=True,
    ),
    Record(
        "t5", ("t5",), (("encoder", "encoder.block"), ("decoder", "decoder.block")),
        _t5_attention("layer.0.SelfAttention"), _t5_ffn(1), (("norm1", "layer.0.layer_norm"), ("norm2", "layer.1.layer_norm")),
        cross=_t5_attention("layer.1.EncDecAttention"), final_norm="decoder.final_layer_norm",
        positions=Positions("none", "relative position bias\n(inside attention)", "T5 adds no position "
                            "vector: each attention adds a learned bias by the distance from query to key."),
        decoder=(("ffn", _t5_ffn(2)), ("norms", (("norm1", "layer.0.layer_norm"),
                 ("norm_cross", "layer.1.layer_norm"), ("norm2", "layer.2.layer_norm")))),
        head_scale=_t5_scale, rms=True, note="a position bias in attention, parts numbered differently in encoder and decoder",
    ),
    Record(
        "marian", ("marian",), (("encoder", "encoder.layers"), ("decoder", "decoder.layers")),
        _bart_attention("self_attn"), FeedForwardParts("fc1", "fc1", "fc2"),
        (("norm1", "self_attn_layer_norm"), ("norm2", "final_layer_norm"),
         ("norm_cross", "encoder_attn_layer_norm")),
        form="post-LN", cross=_bart_attention("encoder_attn"), owner="stack", tokens="embed_tokens",
        positions=Positions("learned", "+ sinusoidal positions", "Marian adds a fixed sine/cosine vector per "
                            "position.", table="embed_positions"),
        note="BART's block with fixed sinusoidal positions", code=True,
    ),
    Record(
        "modernbert", ("modernbert",), (("encoder", "layers"),),
        AttentionParts("attn", "attn.Wo", qkv="attn.Wqkv"), FeedForwardParts("mlp", "mlp.Wi", "mlp.Wo"),
        (("norm1", "attn_norm"), ("norm2", "mlp_norm")), final_norm="final_norm", head=None, positions=ROTARY,
        note="local and global attention layers, a gated FFN in one input projection",
    ),
    Record(
        "qwen3", ("qwen3",), DECODER, replace(LLAMA_ATTENTION, **QK_NORMS), GATED,
        PRE_NORMS, final_norm="norm", positions=ROTARY, note="q/k norms", code=True, rms=True,
    ),
    _gemma("gemma2", ("gemma2",), "norms after attention and FFN too, soft-capping"),
    _gemma("gemma3", ("gemma3_text",), "norms after attention and FFN too, q/k norms", qk_norm=True),
    Record(
        "olmo2", ("olmo2",), DECODER,
        replace(LLAMA_ATTENTION, **QK_NORMS, adds="post_attention_layernorm"),
        FeedForwardParts("mlp", "mlp.up_proj", "mlp.down_proj", "mlp.gate_proj", adds="post_feedforward_layernorm"),
        (("post_attn", "post_attention_layernorm"), ("post_ffn", "post_feedforward_layernorm")),
        form="post-norm", final_norm="norm", positions=ROTARY, note="norms after attention and FFN, q/k norms", code=True,
        rms=True,
    ),
    Record(
        "phi3", ("phi3",), DECODER, AttentionParts("self_attn", "self_attn.o_proj", qkv="self_attn.qkv_proj"),
        FeedForwardParts("mlp", down="mlp.down_proj", gate_up="mlp.gate_up_proj"), PRE_NORMS,
        final_norm="norm", positions=ROTARY, note="fused projections", code=True, rms=True,
    ),
    Record(
        "gpt_neox", ("gpt_neox",), DECODER,
        AttentionParts("attention", "attention.dense", qkv="attention.query_key_value", qkv_per_head=True),
        FeedForwardParts("mlp", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"), PRE_NORMS, form=_parallel,
        final_norm="final_layer_norm", positions=ROTARY, note="attention and FFN side by side", code=True,
    ),
    Record(
        "opt", ("opt",), (("decoder", "decoder.layers"),), _bart_attention("self_attn"),
        FeedForwardParts("fc1", "fc1", "fc2"), (("norm1", "self_attn_layer_norm"), ("norm2", "final_layer_norm")),
        form=_opt_form, final_norm="decoder.final_layer_norm", owner="stack", tokens="embed_tokens",
        positions=Positions("learned", "+ learned positions", "OPT adds a learned vector per position.",
                            table="embed_positions", offset="offset"),
        note="learned positions with an offset and a switch between pre- and post-norm", code=True,
    ),
    Record(
        "gpt_oss", ("gpt_oss",), DECODER, LLAMA_ATTENTION, FeedForwardParts("mlp", experts=True), PRE_NORMS,
        final_norm="norm", positions=ROTARY, note="attention sinks, a mixture of experts", rms=True,
    ),
    _moe("mixtral", ("mixtral",), "a mixture of experts"),
    _moe("qwen2_moe", ("qwen2_moe",), "a mixture of experts with a shared expert"),
    _moe("qwen3_moe", ("qwen3_moe",), "a mixture of experts, q/k norms", qk_norm=True),
)  # fmt: skip
BY_MODEL_TYPE = {model_type: record for record in RECORDS for model_type in record.model_types}
WRITTEN_OUT = (
    "BERT-style encoders, BART and Marian, and the pre-norm decoders of the model map (Llama, Mistral, Qwen3, Gemma 2 and 3, "
    "Phi-3, OLMo 2, GPT-NeoX, OPT, GPT-2, and the mixtures of experts Mixtral, Qwen2-MoE and Qwen3-MoE)"
)


def record_for(model_type: str) -> Record | None:
    """The family record of a config's model type, or None (the model is placed by discovery)."""
    return BY_MODEL_TYPE.get(model_type)
