"""The transformer block on a real model: data flow, one block as code, residual stream, norms, logit lens."""

import streamlit as st

from txviz.app import ui
from txviz.block.views import common, flow, reading, stream, textbook

ui.setup_page(
    "Transformer_Block",
    "Token ids become vectors, N identical blocks each add what attention and the feed-forward network "
    "compute to a residual stream, and a head turns the stream into the output. Every number below is "
    "computed live on the chosen model and checked against the model's own output.",
)

left, right = st.columns([1, 2])
with left:
    name = ui.model_picker(kinds=common.KINDS)
with right:
    text = ui.text_input("Text", common.DEFAULT_TEXT)
loaded = ui.load_model(name, kinds=common.KINDS)
settings = common.controls(loaded, name, text)

ui.page_tabs(
    {
        "Data flow": flow.data_flow,
        "One block": flow.one_block,
        "Residual stream": stream.residual_stream,
        "LayerNorm vs BatchNorm": stream.layer_vs_batch_norm,
        "Logit lens": reading.logit_lens,
        "Mixture of experts": textbook.mixture_of_experts,
        "Conformer": textbook.conformer_block,
        "Transformer base (2017)": textbook.transformer_base,
    },
    loaded,
    settings,
    key="block_view",
)
