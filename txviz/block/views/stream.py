"""The Transformer Block page's tabs on what flows between blocks: the residual stream and the norms."""

import streamlit as st

from txviz.app import ui
from txviz.block import figures, norms, residual
from txviz.block.recording import STAGES
from txviz.block.views.common import Settings, cached_run, first_run

DEFAULT_SENTENCES = (
    "The cat sat on the mat.\nA dog barked.\nRain fell all night over the quiet old town.\nHi."
)


def residual_stream(loaded, settings: Settings) -> None:
    """The norm of the stream and of what each sub-block adds, per layer and token."""
    run = first_run(loaded, settings)
    full = cached_run(loaded, settings.text, tuple(sorted(STAGES)))
    with ui.user_errors():
        sizes = residual.residual_norms(full.stack(settings.stack))
    maps = {
        "the stream": sizes.stream,
        "what attention added": sizes.attn,
        "what the FFN added": sizes.ffn,
    }
    if sizes.cross is not None:
        maps["what cross-attention added"] = sizes.cross
    what = st.radio("Heatmap of", list(maps), horizontal=True, key="block_residual")
    title = f"L2 norm of {what}, per layer and token"
    ui.show_figure(
        figures.residual_heatmap(
            maps[what],
            run.stack(settings.stack).tokens,
            title,
            stream=what == "the stream",
            presenting=ui.presenting(),
        ),
        key="residual_map",
    )
    ui.show_figure(figures.residual_bars(sizes.per_layer()), key="residual_bars")
    st.caption(
        "Each block reads the stream and adds to it: x ← x + MHA(...), then x ← x + FFN(...). "
        + (
            "Post-LN blocks renormalise the sum after every block, so the stream's norm stays "
            "approximately constant, near √d times the LayerNorm gain's scale."
            if run.layout.form == "post-LN"
            else "In a pre-norm model nothing rescales the stream, so its norm grows with depth."
        )
    )


def layer_vs_batch_norm(loaded, settings: Settings) -> None:
    """LayerNorm's and BatchNorm's statistics on a batch, and what changing one sentence does to another."""
    sentence_text = st.text_area(
        "Sentences of the batch, one per line",
        DEFAULT_SENTENCES,
        key="block_sentences",
        max_chars=ui.max_text_chars(),
    )
    with ui.user_errors():
        sentences = norms.sentences_of(sentence_text)
    c1, c2, c3 = st.columns(3)
    other = c1.selectbox(
        "Change sentence",
        range(2, len(sentences) + 1),
        key="block_other",
        format_func=lambda i: f"sentence {i}",
    )
    replacement = c2.text_input(
        "to",
        "Completely different words here, and many more of them.",
        key="block_swap",
        max_chars=ui.max_text_chars(),
    )
    padding = c3.slider("and add padding tokens", 0, 16, 4, key="block_padding")
    exclude = st.toggle("BatchNorm statistics over real tokens only (padding left out)", key="block_mask")
    changed = list(sentences)
    changed[other - 1] = replacement.strip() or sentences[other - 1]
    layer, stack = settings.layer, settings.stack
    with ui.user_errors():
        first = norms.batch_activations(loaded, sentences, layer, stack=stack)
        second = norms.batch_activations(loaded, changed, layer, padding, stack=stack)
    st.caption(f"Activations: {first.where}, shape {first.x.shape} (sentences × padded tokens × features).")
    st.markdown(
        "**LayerNorm** normalises each token over its **features** (the last axis): one mean and std per "
        "token. **BatchNorm** normalises each feature over the **sentences and positions** of the batch "
        "(the first two axes): one mean and std per feature, shared by every sentence, padding included "
        "unless left out. Both are shown without their learned scale and shift."
    )
    _, ln_mean, ln_std = norms.layer_norm(first.x)
    _, bn_mean, bn_std = norms.batch_norm(first.x, first.mask if exclude else None)
    labels = [f"s{b + 1}: {t}" for b, toks in enumerate(first.tokens) for t in toks]
    real = first.mask
    ui.show_figure(
        figures.norm_statistics(ln_mean[real], ln_std[real], bn_mean, bn_std, labels), key="norm_stats"
    )
    effect = norms.dependence(first, second, 0, exclude)
    ui.show_figure(
        figures.dependence_bars(effect, first.tokens[0], f"changing sentence {other} and the padding"),
        key="norm_effect",
    )
    st.caption(
        f"Largest change of sentence 1: LayerNorm {effect.layer_norm.max():.1e} (float rounding), "
        f"BatchNorm {effect.batch_norm.max():.3f}. Sentence 1 itself did not change."
    )
