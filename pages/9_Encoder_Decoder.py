"""Encoder-decoder: decoding step by step, with cross-attention aligning target to source."""

import streamlit as st

from txviz.app import ui
from txviz.seq2seq import figures as figs
from txviz.seq2seq.decoding import decode

FALLBACK_SOURCE = "The animal didn't cross the street because it was too tired."
KIND_LABELS = {
    "Cross-attention (target → source)": "cross",
    "Decoder masked self-attention": "decoder",
    "Encoder self-attention": "encoder",
}

ui.setup_page(
    "Encoder-decoder and cross-attention",
    "The encoder reads the source once; the decoder writes the target one token at a time from "
    "its start token. At each step the newest target token looks back at the target so far "
    "(masked self-attention) and across at the source (cross-attention).",
    share=("model",),
)


@ui.cached(max_entries=16, spinner="Decoding...")
def run(loaded, source: str, method: str, beams: int, steps: int):
    """The decoding and its attention."""
    return decode(loaded, source, method=method, beams=beams, max_new_tokens=steps)


with st.sidebar:
    name = ui.model_picker(kinds=("encoder-decoder",), default="date-bart")
    method_label = st.radio("Decoding", ["Greedy", "Beam search"], key="method", horizontal=True)
    beams = st.slider("Beams", 2, 8, 4, key="beams", disabled=method_label == "Greedy")
    max_steps = st.slider("Most steps", 1, 100, 40, key="max_steps")

loaded = ui.load_model(name, kinds=("encoder-decoder",))
task = loaded.meta.get("task")
if task:
    st.caption(f"{name} was trained on: {task}")
    st.caption(f"Held-out exact match: {loaded.meta.get('heldout_exact_match', 'not measured')}")
with st.expander("With a translation model: does 'it' become 'il' or 'elle'?", expanded=not task):
    st.markdown(
        "Where you have a translation model such as `Helsinki-NLP/opus-mt-en-fr` (choose 'Other' "
        "and type its id or folder), translate *The animal didn't cross the street because it was "
        "too tired.* and then *... because it was too wide.* French must choose **il** for "
        "*l'animal* (masculine) or **elle** for *la rue* (feminine). Move the step slider to the "
        "step that writes the pronoun and see which source tokens its cross-attention reads."
    )
source = ui.text_input(
    "Source sentence", loaded.meta.get("example_source", FALLBACK_SOURCE), key=f"source_{name}", height=80
)
method = "greedy" if method_label == "Greedy" else "beam"
with ui.user_errors():
    trace = run(loaded, source, method, beams, max_steps)

if trace.notice:
    st.warning(trace.notice)
st.markdown(f"**Output** ({trace.method}, {len(trace.steps)} steps):")
st.code(trace.output_text or "(nothing but the end token)", language=None)
if not trace.finished:
    st.info(f"No end token within {max_steps} steps: raise 'Most steps' to let it finish.")

last = len(trace.steps) - 1
step = st.slider("Step", 0, last, last, key="step") if last > 0 else 0
kind = KIND_LABELS[st.radio("Attention", list(KIND_LABELS), key="kind", horizontal=True)]
part = {"cross": trace.cross, "decoder": trace.decoder, "encoder": trace.encoder}[kind]
col_layer, col_head = st.columns(2)
layer = col_layer.selectbox("Layer", range(part.n_layers), index=part.n_layers - 1, key=f"layer_{kind}")
head = col_head.selectbox("Head", range(part.n_heads), key=f"head_{kind}")

ui.show_figure(figs.step_attention(trace, step, min(layer, trace.cross.n_layers - 1), head), key="step_view")
ui.show_figure(figs.attention_head(trace, kind, layer, head, step, ui.presenting()), key="head_view")
st.caption(
    "Rows are queries: a row 'a → b' is the step whose query is target token a and which chose b. "
    "Rows after the chosen step are hidden; the decoder's future positions are masked (blank)."
)

col_probs, col_alts = st.columns(2)
with col_probs:
    ui.show_figure(figs.chosen_probabilities(trace, step), key="probs")
with col_alts:
    ui.show_figure(figs.step_alternatives(trace.steps[step]), key="alternatives")
if trace.steps[step].beams:
    st.markdown(f"**Beams kept after step {step}** (summed log-probability):")
    st.dataframe(
        [{"hypothesis": text, "log-probability": round(score, 4)} for text, score in trace.steps[step].beams],
        width="stretch",
    )

with st.expander("Every layer and head of this attention kind"):
    ui.show_figure(figs.all_heads(trace, kind, step, ui.presenting()), key="mosaic")

st.caption(
    "Attention weights show where each step read from, not why it chose its token: they are one "
    "signal among many (values, feed-forward layers and residuals also carry information)."
)
