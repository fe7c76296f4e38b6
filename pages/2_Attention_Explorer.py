"""Every head and layer of a real model on your text: heatmaps, grids, token focus, rollout."""

import streamlit as st

from txviz.app import ui
from txviz.explorer.views import attention as views

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."

ui.setup_page(
    "Attention_Explorer",
    "Rows are queries (the token doing the looking), columns are keys (what it looks at); each row "
    "sums to 1. Attention shows where information flows, not why the model decides.",
)
settings = views.sidebar()  # special tokens, whole words, colour scale, threshold

left, right = st.columns([1, 2])
with left:
    name = ui.model_picker(kinds=("encoder", "decoder"))
with right:
    text = ui.text_input("Text", DEFAULT_TEXT)
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
shown = views.traced(name, loaded, text, settings)  # the trace as the options shape it, and the head
# Only the open tab is computed: the whole-model grid costs seconds at 512 tokens.
ui.page_tabs(
    {
        "One head": views.one_head,
        "All heads": views.all_heads,
        "Token focus": views.token_focus,
        "Aggregates": views.aggregates,
    },
    shown,
)
