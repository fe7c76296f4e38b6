"""Encoder-decoder: decoding step by step, with cross-attention aligning target to source."""

import streamlit as st

from txviz.app import ui
from txviz.grammar import views as grammar
from txviz.seq2seq.views import parallel, settings, steps, textbook, training

ui.setup_page(
    "Encoder_Decoder",
    "The encoder reads the source once; the decoder writes the target one token at a time from "
    "its start token. At each step the newest target token looks back at the target so far "
    "(masked self-attention) and across at the source (cross-attention).",
)

chosen = settings.sidebar()
loaded = ui.load_model(chosen.name, kinds=settings.KINDS)
chosen = settings.with_source(loaded, chosen)
trace = settings.decoded(loaded, chosen)
if trace.notice:
    st.warning(trace.notice)

ui.page_tabs(
    {
        "Decoding step by step": steps.decoding_tab,
        "Cross-attention arithmetic": textbook.arithmetic_tab,
        "Teacher forcing": textbook.forcing_tab,
        "All positions at once": parallel.parallel_tab,
        "NAT trained for it": parallel.nat_tab,
        "Cross-attention reads layer l": training.cross_layer_tab,
        "Training on exact match": training.metric_tab,
        grammar.TAB_LABEL: grammar.show,
    },
    loaded,
    chosen,
)
