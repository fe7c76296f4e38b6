"""Thousands of tokens of attention: every layer reduced while it runs, the whole document first, exact rows on demand."""

import streamlit as st

from txviz.app import ui
from txviz.longdoc import views
from txviz.longdoc.sample import SAMPLE

ui.setup_page(
    "Long_Documents",
    "Up to 4,096 tokens (8,192 where the model reads them). Every layer's heads are summarised "
    "while the model runs, and the chosen layer's attention is reduced to pooled tiles and "
    "sentence maps block by block, so no map is ever kept whole. Drag a box on the pooled map, "
    "or pick a sentence, for exact rows.",
)

left, right = st.columns([1, 2])
with left:
    name = ui.model_picker(kinds=("encoder", "decoder"), default="smollm2")
    loaded = ui.load_model(name, kinds=("encoder", "decoder"))
    max_tokens = views.longest_input(loaded)
with right:
    text = ui.text_input("Document", SAMPLE, height=220)

reading = views.read(loaded, text, max_tokens)  # the layer, the document's overview there, the style
ui.page_tabs(
    {
        "Overview": views.overview,  # every head's summaries, the pooled map, sentence maps, sinks
        "Detail": views.detail,  # exact rows of a sentence or a dragged box
    },
    loaded,
    reading,
)
