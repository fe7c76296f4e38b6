"""Soft vs hard attention: one real model under five normalizers, and a toy trained both ways."""

import streamlit as st

from txviz.app import ui
from txviz.softhard import views

ui.setup_page(
    "Soft_vs_Hard",
    "Softmax gives every key some weight; hard attention picks one. In between: a temperature, "
    "top-k and sparsemax. Rows are queries, columns are keys.",
)

st.header("On a real model")
left, right = st.columns([1, 2])
with left:
    name = ui.model_picker(kinds=("encoder", "decoder"))
    temperature, k = views.normalizer_inputs()
with right:
    text = ui.text_input("Text", views.DEFAULT_TEXT)
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
views.on_a_real_model(loaded, views.Settings(text, temperature, k))

st.header("Training, where the difference is real")
views.training()

st.header("Reading attention as explanation")
views.attention_as_explanation()
