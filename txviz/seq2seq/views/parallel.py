"""Decoding every position at once: date-bart refined in passes, and the digit readers trained for it."""

from __future__ import annotations

import streamlit as st

from txviz.app import ui
from txviz.seq2seq import figures as figs
from txviz.seq2seq import nat, numbers, parallel
from txviz.seq2seq.views.settings import Settings

PARALLEL_EXAMPLES = 200  # held-out dates scored live: about ten seconds for every setting at once


@ui.cached(max_entries=16, spinner="Decoding in parallel...")
@ui.heavy
def parallel_run(loaded, source: str, passes: int, strategy: str):
    return parallel.decode_one(loaded, source, passes, strategy)


@ui.cached(max_entries=2, spinner="Decoding held-out dates every way...")
@ui.heavy
def parallel_heldout(loaded, examples: int):
    return parallel.compare_on_dates(loaded, examples=examples)


@ui.shared_resource(spinner="Loading the digit readers...")
def digit_readers():
    return nat.load()


def parallel_tab(loaded, settings: Settings) -> None:
    """One source decoded in a few parallel passes beside greedy, and on demand every way on held-out dates."""
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
        one = parallel_run(loaded, settings.source, passes, strategy)
    cols = st.columns(2)
    cols[0].metric(f"Greedy ({one.greedy_passes} passes)", one.greedy_text or "(nothing)")
    cols[1].metric(f"{strategy} ({passes} passes)", one.pass_texts[-1] or "(nothing)")
    ui.show_figure(figs.refinement_figure(one, ui.presenting()), key="refinement")
    # Scoring every setting on the held-out dates takes tens of seconds: only when asked.
    if settings.name == "date-bart" and st.toggle(
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


def digits_input(key: str) -> tuple[str, ...]:
    """The digits a reader reads aloud, typed here (a clear message and a stop on anything else)."""
    with ui.user_errors():
        return numbers.read_digits(
            st.text_input("Digits to read aloud (2 to 4, from 1 to 9)", "3 1 4", key=key,
                          max_chars=ui.max_text_chars(12))
        )  # fmt: skip


def nat_tab(loaded, settings: Settings) -> None:
    """Digit readers trained left to right and all at once, scored, and reading the digits typed here."""
    st.markdown(nat.__doc__.split("\n\n", 1)[1].replace("\n", " "))
    readers, nat_runs = digit_readers()
    st.dataframe(nat.score_rows(nat_runs), hide_index=True, width="stretch")
    shown = nat.example(readers, digits_input("nat_digits"))
    st.dataframe(shown["rows"], hide_index=True, width="stretch")
    lengths = ", ".join(f"{n} words: {p:.2f}" for n, p in shown["lengths"].items())
    st.markdown(f"The NAT trained on both languages predicts the length first ({lengths}), then:")
    st.dataframe(shown["positions"], hide_index=True, width="stretch")
    st.markdown(nat.WHY_AT_WINS)
    st.markdown(
        "Each reader keeps **separate source and target embedding tables** (and a third matrix for the output "
        "layer); the 2017 Transformer shares one matrix between its two embeddings and the pre-softmax layer:"
    )
    st.dataframe(nat.embedding_rows(readers["nat"]), hide_index=True, width="stretch")
    config = nat_runs["config"]
    st.caption(
        f"Each model: encoder and decoder of {config['layers']} layers × {config['heads']} heads, d = "
        f"{config['d_model']}, {config['steps']} Adam steps of {config['batch_size']} sources, seed "
        f"{config['seed']} (it also draws each answer's language, 50/50). Held-out: {config['held_out']} "
        "digit strings never trained on, decoded greedily. Trained by `python -m txviz train nat` "
        "(about a minute and a half on one CPU thread)."
    )
