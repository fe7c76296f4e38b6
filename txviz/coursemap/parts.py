"""The course map: self-attention growing into the transformer (the CS60010 slides' four additions and
their transformer summary), and the items the pages keep in later tabs, each with the page and tab
that shows it.

A link is a page's URL name and the settings its link opens (the tab's key and label, as the page's
``ui.link_tab`` reads them, and any other link value), so it opens the right tab, not the first one.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Link:
    """Where a part is shown: a page (URL name), what to look at, the settings the link carries."""

    page: str
    what: str
    settings: dict = field(default_factory=dict)
    tab_key: str | None = None  # which of the settings names the tab

    @property
    def tab(self) -> str | None:
        """The tab's label, or None for a link to a page without tabs."""
        return self.settings[self.tab_key] if self.tab_key else None


@dataclass(frozen=True)
class Part:
    """One box of the map: its name, what it adds, and the pages that show it."""

    key: str
    name: str
    adds: str
    links: tuple[Link, ...]


def tab(page: str, key: str, label: str, what: str, **settings) -> Link:
    """A link that opens ``page`` on the tab ``label`` of its tabs keyed ``key``."""
    return Link(page, what, {key: label, **settings}, key)


CORE = Part(
    "self_attention",
    "Self-attention",
    "each output is a weighted average of the values, weighted by softmax(q · k / √d)",
    (tab("Self_Attention", "view", "One head, by hand", "queries, keys, softmax and the weighted sum"),),
)

ADDITIONS = (  # CS60010's four additions that turn self-attention into a transformer, in its order
    Part(
        "positions",
        "+ Positions",
        "attention alone ignores order: shuffle the tokens and every output only moves with them",
        (
            tab("Self_Attention", "view", "Shuffle the tokens", "without positions, order is lost"),
            tab(
                "Positional_Encoding",
                "view",
                "Sinusoids",
                "sinusoidal, learned, rotary and relative positions",
            ),
        ),
    ),
    Part(
        "multi_head",
        "+ Multi-head",
        "one head averages one way; several heads look at several things at once",
        (tab("Self_Attention", "view", "Several heads", "why several heads, and their concatenation"),),
    ),
    Part(
        "nonlinearity",
        "+ Nonlinearity",
        "attention is nonlinear in its input (the weights are a softmax of X) but linear in the values "
        "for fixed weights: a feed-forward network on each token adds a nonlinearity on the values",
        (
            tab("Transformer_Block", "block_view", "One block", "the block as code: attention, then the MLP"),
            tab("Self_Attention", "view", "As one matrix (Fig. 12.2)", "linear in the values, not in X"),
        ),
    ),
    Part(
        "masked_decoding",
        "+ Masked decoding",
        "a decoder must not read the future: the causal mask hides the keys after each query",
        (
            tab("Masking_Patterns", "view", "Gallery", "the causal mask", gallery_pattern="causal"),
            tab("Encoder_Decoder", "view", "Teacher forcing", "training every position at once, masked"),
        ),
    ),
)

SUMMARY = (  # the transformer summary: what the block and the stack add around the four
    Part(
        "residual",
        "Residual stream",
        "each sub-block adds to the stream instead of replacing it",
        (tab("Transformer_Block", "block_view", "Residual stream", "what each layer adds"),),
    ),
    Part(
        "layer_norm",
        "Layer normalisation",
        "each token's vector is normalised on its own, not across the batch",
        (
            tab(
                "Transformer_Block",
                "block_view",
                "LayerNorm vs BatchNorm",
                "the two normalisations side by side",
            ),
        ),
    ),
    Part(
        "block",
        "The transformer block",
        "attention, MLP, residuals and norms in one forward pass, stacked L times",
        (tab("Transformer_Block", "block_view", "Data flow", "one forward pass, box by box"),),
    ),
    Part(
        "cross_attention",
        "Encoder-decoder",
        "the decoder's queries read the encoder's keys and values: cross-attention",
        (tab("Encoder_Decoder", "view", "Cross-attention arithmetic", "cross-attention computed by hand"),),
    ),
)

BURIED = (  # items the pages keep in later tabs or at their end: the map is where they are found
    Part(
        "efficient",
        "Efficient transformers",
        "attention in less than n² time and memory: sparse patterns, low rank, kernels",
        (
            tab(
                "Self_Attention",
                "view",
                "Linear attention",
                "linear attention, Linformer, Performer, the families",
            ),
            tab(
                "Masking_Patterns", "view", "Real cost", "a block-sparse kernel timed against dense attention"
            ),
        ),
    ),
    Part(
        "objectives",
        "BERT and GPT objectives",
        "masked-token prediction against next-token prediction, on the same text",
        (tab("Masking_Patterns", "view", "GPT vs BERT objectives", "the two training objectives"),),
    ),
    Part(
        "using_the_encoder",
        "Using the encoder",
        "a sentence vector from [CLS] and a label per token, from the encoder frozen or fine-tuned",
        (
            tab(
                "Masking_Patterns",
                "view",
                "Using the encoder",
                "sentence and token tasks on the encoder, frozen and fine-tuned",
            ),
        ),
    ),
    Part(
        "moe",
        "Mixture of experts",
        "a router sends each token to one of several MLPs",
        (tab("Transformer_Block", "block_view", "Mixture of experts", "routing tokens to experts"),),
    ),
    Part(
        "il_elle",
        "il / elle",
        "the book's translation example: which heads link 'it' to the animal or the street",
        (
            Link("Coreference", "the book's il/elle example, at the end of the page"),
            tab(
                "Encoder_Decoder",
                "view",
                "Grammar as a foreign language",
                "a model trained here writes il or elle; the pronoun's cross-attention",
                grammar_task="translate:",
            ),
        ),
    ),
    Part(
        "vit_book",
        "ViT as the books draw it",
        "a 224 px photograph in 196 patches of 16 x 16 px, flattened and projected",
        (tab("Vision_Transformer", "vit_view", "ViT-Base as the books draw it", "patches, flattening, z0"),),
    ),
)

ADDED = (  # demos added after the map was first drawn, each with the settings its link opens
    Part(
        "decoding",
        "Decoding: the mask, and all at once",
        "a decoder trained without its mask reads the answer and fails to generate; a NAT writes every "
        "position at once after predicting the length",
        (
            tab(
                "Masking_Patterns", "view", "Why a decoder needs its mask", "the same decoder, masked and not"
            ),
            tab(
                "Encoder_Decoder",
                "view",
                "NAT trained for it",
                "a non-autoregressive reader beside the AT, and each reader's separate embedding tables",
            ),
        ),
    ),
    Part(
        "beyond_rnn",
        "What attention adds to an RNN",
        "nested phrases an RNN reads as a flat chain, and attention with relative positions that can be "
        "any convolution (Cordonnier et al. 2020)",
        (
            tab(
                "Why_Attention", "view", "Nested phrases", "car, blue car, into the blue car: layer by layer"
            ),
            tab("Why_Attention", "view", "Attention = convolution", "k² heads that are a k x k kernel"),
        ),
    ),
    Part(
        "original_transformer",
        "The 2017 Transformer in numbers",
        "6 + 6 layers, d_model 512, 8 heads of 64, d_ff 2048: the parameter count from the shapes",
        (
            tab(
                "Transformer_Block",
                "block_view",
                "Transformer base (2017)",
                "the original's shapes and count",
            ),
        ),
    ),
    Part(
        "speech",
        "Speech: the Conformer",
        "a convolution module inside the block, and truncated attention over long frame sequences",
        (
            tab(
                "Transformer_Block",
                "block_view",
                "Conformer",
                "the convolution module and truncated attention",
            ),
        ),
    ),
    Part(
        "floater",
        "Positions by an ODE: FLOATER",
        "inductive, data-driven and parameter-efficient positions from a learned flow",
        (tab("Positional_Encoding", "view", "FLOATER", "the comparison table and the position matrices"),),
    ),
    Part(
        "relatedness",
        "Entailment retargeted",
        "the same decomposable attention trained for a 0 to 5 relatedness score (STS-B's task)",
        (Link("Entailment", "relatedness, 0 to 5, at the end of the page"),),
    ),
    Part(
        "seq2seq_variants",
        "date-bart retrained",
        "its decoder's cross-attention reading encoder layer 0, 1 or 2 instead of the last, and trained on "
        "exact match itself by self-critical REINFORCE beside continued cross-entropy",
        (
            tab(
                "Encoder_Decoder",
                "view",
                "Cross-attention reads layer l",
                "held-out exact match of each variant, and each on the source",
            ),
            tab(
                "Encoder_Decoder",
                "view",
                "Training on exact match",
                "REINFORCE on the metric against cross-entropy, from one start",
            ),
        ),
    ),
    Part(
        "grammar",
        "Seq2seq for every task",
        "one tiny encoder-decoder parses, tags, counts and translates, the task named by the source's first "
        "word (Grammar as a foreign language, Vinyals et al. 2015)",
        (
            tab(
                "Encoder_Decoder",
                "view",
                "Grammar as a foreign language",
                "parse: the tree as brackets, and each output token's cross-attention",
                grammar_task="parse:",
            ),
        ),
    ),
    Part(
        "sagan_detr",
        "Attention in vision: SAGAN and DETR",
        "a self-attention layer over a feature map reaches past a 3 x 3 convolution's window; object "
        "queries matched one to one to the objects (Hungarian), so no non-maximum suppression",
        (
            tab(
                "Vision_Transformer",
                "vit_view",
                "SAGAN and DETR",
                "SAGAN's weights over a photograph, DETR's matching costs",
            ),
        ),
    ),
)

PARTS = (CORE, *ADDITIONS, *SUMMARY, *BURIED, *ADDED)


def part(key: str) -> Part:
    """The part called ``key``."""
    return next(p for p in PARTS if p.key == key)
