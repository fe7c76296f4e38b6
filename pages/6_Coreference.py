"""Coreference: where does a pronoun look, and does that follow what it means?"""

import streamlit as st

from txviz.app import ui
from txviz.coref.views import heads, pair

ui.setup_page(
    "Coreference",
    "Two sentences that differ in one word, and the word changes what the pronoun means. "
    "Does any attention head follow the change?",
)

chosen = pair.choose_pair()
left, right = st.columns(2)
with left:
    name = ui.model_picker(kinds=("encoder", "decoder"), default="minilm")
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
settings = heads.settings(loaded, name, chosen, right)
scores = heads.scores(loaded, settings)  # the pair traced, every head scored on the set

head = heads.every_head(loaded, settings, scores)
heads.which_heads(loaded, scores)
heads.own_answer(loaded, settings, scores, head)
heads.il_elle(loaded, settings, head)

st.warning(
    "Attention weights are one signal, not an explanation: a head can look at a word without "
    "using it, and a model can resolve a pronoun through paths no single head shows."
)
