"""The Why Attention page's nested-phrase tab: which layers' attention groups "car", "blue car",
"the blue car", "into the blue car", against attention that depends only on distance."""

from __future__ import annotations

import streamlit as st

from txviz.app import teaching, ui
from txviz.why import figures, hierarchy
from txviz.why.views import Sizes


@ui.cached(max_entries=16, spinner="Running the model on the sentence...")
@ui.heavy
def _measure(loaded, index: int):
    return hierarchy.hierarchy(loaded, hierarchy.EXAMPLES[index])


def show(sizes: Sizes) -> None:
    """The tab: a model and a sentence, the per-layer grouping figure and one row per phrase (the
    page's n and k do not apply)."""
    st.markdown(
        "An RNN reads one flat chain of words, but language nests: *car* inside *blue car* inside *the blue "
        "car* inside *into the blue car* (the CS60010 slides' example of hierarchy). Self-attention can "
        "read a whole phrase in one step. Does a trained encoder's attention group the nested phrases, "
        "or only look at near tokens?"
    )
    left, right = st.columns(2)
    with left:
        name = ui.model_picker(kinds=hierarchy.ENCODERS, key="hier_model")
    texts = [example.text for example in hierarchy.EXAMPLES]
    with right:
        text = st.selectbox("Sentence", texts, index=ui.link_index("hier_example", texts), key="hier_example")
    loaded = ui.load_model(name, kinds=hierarchy.ENCODERS)
    with ui.user_errors():
        result = _measure(loaded, texts.index(text))
    ui.show_figure(figures.hierarchy_lines(result), key="hierarchy")
    teaching.notice(
        "the two-word phrase (modifier and noun) takes more weight from its own tokens than distance "
        "explains in nearly every layer, and more than the span shifted one token; the wider phrases do so "
        "in fewer layers: attention groups the nearest phrase first, not a whole tree."
    )
    st.dataframe(result.rows(), hide_index=True)
    st.caption(
        "Each layer's heads, on the content tokens (no [CLS] or [SEP]; rows renormalised). Phrase weight: "
        "the mean over the phrase's tokens of the weight each gives the phrase, itself included. Flat-distance "
        "baseline: for each offset j − i the head's mean weight at that offset over this sentence, renormalised "
        "per row, so it depends on distance only. A layer groups the phrase when its heads' mean excess is "
        "above 0 and above the shifted span's. One sentence is one sample: compare the three. "
        + hierarchy.DECODER_NOTE
    )
