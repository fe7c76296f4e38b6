"""Encoder-decoder: decoding step by step, with cross-attention aligning target to source."""

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.explain import figures as explain_figs
from txviz.explain.methods import METHODS
from txviz.explain.seq2seq import attribute_source
from txviz.selfattention import figures as sa_figs
from txviz.selfattention import toy as ta
from txviz.seq2seq import arithmetic, nat, numbers, parallel, teacher
from txviz.seq2seq import figures as figs
from txviz.seq2seq.decoding import decode

PARALLEL_EXAMPLES = 200  # held-out dates scored live: about ten seconds for every setting at once
FALLBACK_SOURCE = "The animal didn't cross the street because it was too tired."
KIND_LABELS = {
    "Cross-attention (target → source)": "cross",
    "Decoder masked self-attention": "decoder",
    "Encoder self-attention": "encoder",
}

ui.setup_page(
    "Encoder_Decoder",
    "The encoder reads the source once; the decoder writes the target one token at a time from "
    "its start token. At each step the newest target token looks back at the target so far "
    "(masked self-attention) and across at the source (cross-attention).",
)


@ui.cached(max_entries=16, spinner="Decoding...")
@ui.heavy
def run(loaded, source: str, method: str, beams: int, steps: int):
    """The decoding and its attention."""
    return decode(loaded, source, method=method, beams=beams, max_new_tokens=steps)


@ui.cached(max_entries=32, spinner="Attributing the step to the source...")
@ui.heavy
def source_attribution(loaded, source: str, method: str, beams: int, steps: int, step: int, attribution: str):
    """One decoding step's attribution to the source tokens, beside its cross-attention."""
    return attribute_source(loaded, source, run(loaded, source, method, beams, steps), step, attribution)


with st.sidebar:
    name = ui.model_picker(kinds=("encoder-decoder",), default="date-bart")
    methods = ["Greedy", "Beam search"]
    method_label = st.radio(
        "Decoding", methods, index=ui.link_index("method", methods), key="method", horizontal=True
    )
    beams = st.slider(
        "Beams", 2, 8, ui.link_value("beams", 4, range(2, 9)), key="beams", disabled=method_label == "Greedy"
    )
    max_steps = st.slider(
        "Most steps", 1, 100, ui.link_value("max_steps", 40, range(1, 101)), key="max_steps"
    )

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
VIEWS = [
    "Decoding step by step",
    "Cross-attention arithmetic",
    "Teacher forcing",
    "All positions at once",
    "NAT trained for it",
]
decode_tab, arithmetic_tab, forcing_tab, parallel_tab, nat_tab = st.tabs(
    VIEWS, key="view", on_change="rerun", default=ui.link_tab("view", VIEWS)
)

if decode_tab.open:
    with decode_tab:
        st.markdown(f"**Output** ({trace.method}, {len(trace.steps)} steps):")
        st.code(trace.output_text or "(nothing but the end token)", language=None)
        if not trace.finished:
            st.info(f"No end token within {max_steps} steps: raise 'Most steps' to let it finish.")

        last = len(trace.steps) - 1
        step = (
            st.slider("Step", 0, last, ui.link_value("step", last, range(last + 1)), key="step")
            if last > 0
            else 0
        )
        kind = KIND_LABELS[
            st.radio(
                "Attention",
                list(KIND_LABELS),
                index=ui.link_index("kind", list(KIND_LABELS)),
                key="kind",
                horizontal=True,
            )
        ]
        part = {"cross": trace.cross, "decoder": trace.decoder, "encoder": trace.encoder}[kind]
        layer, head = widgets.layer_head_picker(
            part.n_layers, part.n_heads, (f"layer_{kind}", f"head_{kind}"), (part.n_layers - 1, 0)
        )

        ui.show_figure(
            figs.step_attention(trace, step, min(layer, trace.cross.n_layers - 1), head), key="step_view"
        )
        teaching.notice(
            "each row is one decoding step: its cross-attention shows which source tokens the decoder read "
            "while choosing that token, often the ones it is copying or translating."
        )
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
                [
                    {"hypothesis": text, "log-probability": round(score, 4)}
                    for text, score in trace.steps[step].beams
                ],
                width="stretch",
            )

        if st.toggle("Why this token? Attribution to the source", key="explain_source"):
            explain_method = st.radio(
                "Attribution", list(METHODS), format_func=METHODS.get, key="explain_method", horizontal=True
            )
            with ui.user_errors():
                explained = source_attribution(loaded, source, method, beams, max_steps, step, explain_method)
            ui.show_figure(
                explain_figs.source_attribution_figure(explained, METHODS[explain_method]),
                key="explain_source_fig",
            )
            st.caption(
                "Does the step depend on the source tokens its cross-attention reads? Attribution is a share of "
                "its total magnitude (negative: that token lowers the chosen token's log-probability)."
            )

        with st.expander("Every layer and head of this attention kind"):
            ui.show_figure(figs.all_heads(trace, kind, step, ui.presenting()), key="mosaic")

        st.caption(
            "Attention weights show where each step read from, not why it chose its token: they are one "
            "signal among many (values, feed-forward layers and residuals also carry information)."
        )


@ui.cached(max_entries=16, spinner="Recording cross-attention's queries and keys...")
@ui.heavy
def cross_run(loaded, source: str, method: str, beams: int, steps: int):
    """Cross-attention of the decoded target with queries, keys and scores."""
    return arithmetic.cross_attention_trace(loaded, source, run(loaded, source, method, beams, steps))


if arithmetic_tab.open:
    with arithmetic_tab:
        with ui.user_errors():
            cross = cross_run(loaded, source, method, beams, max_steps)
        cols = st.columns(3)
        x_layer, x_head = widgets.layer_head_picker(
            cross.n_layers, cross.n_heads, ("x_layer", "x_head"), (cross.n_layers - 1, 0), columns=cols[:2]
        )
        target_pos = cols[2].selectbox(
            "Target token (query)",
            range(len(cross.query_tokens)),
            index=ui.link_index(
                "x_query", range(len(cross.query_tokens)), min(1, len(cross.query_tokens) - 1)
            ),
            format_func=lambda i: f"{i}: {cross.query_tokens[i]}",
            key="x_query",
        )
        st.latex(
            r"a_{t,s} = \mathrm{softmax}_s\!\left(\frac{q^{\mathrm{dec}}_t \cdot k^{\mathrm{enc}}_s}{\sqrt{d}}\right)"
        )
        with ui.user_errors():
            x_step = arithmetic.cross_step(cross, x_layer, x_head, target_pos)
        score_gap, weight_gap = arithmetic.largest_gaps(cross)
        title = f"{name}, cross-attention layer {x_layer}, head {x_head}, target {target_pos} ({x_step.query_token})"
        ui.show_figure(
            sa_figs.query_steps_figure(x_step.key_tokens, x_step.scores, x_step.captured_weights, title),
            key="x_steps",
        )
        st.success(
            f"Recomputed here from the captured decoder query and encoder keys: this row's scores within "
            f"{x_step.max_score_difference:.1e} and weights within {x_step.max_weight_difference:.1e} of "
            f"the model's; over every layer, head and target token: scores within {score_gap:.1e}, "
            f"weights within {weight_gap:.1e}."
        )
        st.dataframe(ta.real_step_rows(x_step), hide_index=True, width="stretch")
        st.caption(
            "The query comes from the decoder (the target so far), the keys and values from the "
            "encoder's last layer (the source): the same arithmetic as self-attention, between two "
            "sequences. No mask: every target token may read every source token."
        )


@ui.cached(max_entries=16, spinner="Decoding both ways...")
@ui.heavy
def forcing_run(loaded, source: str, reference: str):
    return teacher.compare(loaded, source, reference)


if forcing_tab.open:
    with forcing_tab:
        st.markdown(
            "**Teacher forcing** (training): each step reads the *reference* prefix, right or wrong "
            "predictions alike. **Free running** (inference): each step reads the model's *own* "
            "previous outputs. They agree until the model's first mistake; after it, free running "
            "reads a prefix that teacher forcing never showed it."
        )
        dates_model = name == "date-bart"
        cols = st.columns(2)
        with cols[0]:
            tf_source = ui.text_input(
                "Source",
                teacher.DEFAULT_SOURCE if dates_model else source,
                key=f"tf_source_{name}",
                height=68,
            )
        with cols[1]:
            tf_reference = st.text_input(
                "Reference output",
                teacher.DEFAULT_REFERENCE if dates_model else trace.output_text,
                key=f"tf_reference_{name}",
                max_chars=ui.max_text_chars(),
            )
        with ui.user_errors():
            comparison = forcing_run(loaded, tf_source, tf_reference)
        if comparison.notice:
            st.warning(comparison.notice)
        cols = st.columns(3)
        cols[0].metric("Free running writes", comparison.free_text or "(nothing)")
        cols[1].metric("Teacher-forced predictions", comparison.forced_text or "(nothing)")
        cols[2].metric(
            "First step off the reference", "none" if comparison.divergence is None else comparison.divergence
        )
        ui.show_figure(figs.forcing_figure(comparison), key="forcing")
        st.dataframe(teacher.step_rows(comparison), hide_index=True, width="stretch")
        st.caption("Both runs are greedy and use the same weights; only what the decoder reads differs.")
        if dates_model:
            st.caption(
                "date-bart never saw years before 1950, so for 1945 it writes 1955: at the third step it "
                "puts almost no probability on 4. Teacher forcing then feeds it the 4 anyway; free running "
                "feeds it its own 5 (exposure bias: training never showed it its own mistakes)."
            )


@ui.cached(max_entries=16, spinner="Decoding in parallel...")
@ui.heavy
def parallel_run(loaded, source: str, passes: int, strategy: str):
    return parallel.decode_one(loaded, source, passes, strategy)


@ui.cached(max_entries=2, spinner="Decoding held-out dates every way...")
@ui.heavy
def parallel_heldout(loaded, examples: int):
    return parallel.compare_on_dates(loaded, examples=examples)


if parallel_tab.open:
    with parallel_tab:
        st.markdown(
            "**Left to right** (autoregressive): one decoder pass per token, each reading the tokens "
            "before it. **All positions at once** (non-autoregressive, Mask-Predict style): the first "
            "pass reads a placeholder at every position and predicts them all; each later pass re-masks "
            "the least confident positions and predicts them again from the rest. **Jacobi** "
            "re-predicts every position from the previous pass instead. The target length is given "
            "(greedy's here; Mask-Predict predicts it; the next tab's models predict it)."
        )
        cols = st.columns(2)
        strategy = cols[0].radio("Refinement", parallel.STRATEGIES, key="parallel_strategy", horizontal=True)
        passes = cols[1].slider("Decoder passes", 1, parallel.DATE_TOKENS, 4, key="parallel_passes")
        with ui.user_errors():
            one = parallel_run(loaded, source, passes, strategy)
        cols = st.columns(2)
        cols[0].metric(f"Greedy ({one.greedy_passes} passes)", one.greedy_text or "(nothing)")
        cols[1].metric(f"{strategy} ({passes} passes)", one.pass_texts[-1] or "(nothing)")
        ui.show_figure(figs.refinement_figure(one, ui.presenting()), key="refinement")
        # Scoring every setting on the held-out dates takes tens of seconds: only when asked.
        if name == "date-bart" and st.toggle(
            f"Score every strategy and pass count on {PARALLEL_EXAMPLES} held-out dates (tens of seconds)",
            key="parallel_heldout",
        ):
            comparison = parallel_heldout(loaded, PARALLEL_EXAMPLES)
            ui.show_figure(figs.parallel_accuracy_figure(comparison), key="parallel_accuracy")
            st.markdown(parallel.reading(comparison))
        st.caption(
            "date-bart was trained left to right with teacher forcing: its decoder is causal (position t "
            "reads only positions before it) and never read a placeholder. Decoding in parallel puts it "
            "out of its training distribution, so one pass fails; a model trained for it (Gu et al. 2018, "
            "Ghazvininejad et al. 2019) learns to predict from a masked target. Passes count decoder "
            "passes; the encoder runs once either way."
        )


@ui.shared_resource(spinner="Loading the digit readers...")
def digit_readers():
    return nat.load()


if nat_tab.open:
    with nat_tab:
        st.markdown(nat.__doc__.split("\n\n", 1)[1].replace("\n", " "))
        readers, nat_runs = digit_readers()
        st.dataframe(nat.score_rows(nat_runs), hide_index=True, width="stretch")
        with ui.user_errors():
            digits = numbers.read_digits(
                st.text_input(
                    "Digits to read aloud (2 to 4, from 1 to 9)",
                    "3 1 4",
                    key="nat_digits",
                    max_chars=ui.max_text_chars(12),
                )
            )
        shown = nat.example(readers, digits)
        st.dataframe(shown["rows"], hide_index=True, width="stretch")
        lengths = ", ".join(f"{n} words: {p:.2f}" for n, p in shown["lengths"].items())
        st.markdown(f"The NAT trained on both languages predicts the length first ({lengths}), then:")
        st.dataframe(shown["positions"], hide_index=True, width="stretch")
        st.markdown(nat.WHY_AT_WINS)
        config = nat_runs["config"]
        st.caption(
            f"Each model: encoder and decoder of {config['layers']} layers × {config['heads']} heads, d = "
            f"{config['d_model']}, {config['steps']} Adam steps of {config['batch_size']} sources, seed "
            f"{config['seed']} (it also draws each answer's language, 50/50). Held-out: {config['held_out']} "
            "digit strings never trained on, decoded greedily. Trained by `python -m txviz train nat` "
            "(about a minute and a half on one CPU thread)."
        )
