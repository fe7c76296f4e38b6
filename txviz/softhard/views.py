"""The soft-vs-hard page's sections: a real model under five normalizers, a toy trained both ways, and
what attention weights can and cannot explain."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.softhard import compare as soft_hard
from txviz.softhard import figures, toy

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."


@dataclass(frozen=True)
class Settings:
    """The real model's normalizer settings and text."""

    text: str
    temperature: float
    k: int


def normalizer_inputs() -> tuple[float, int]:
    """The temperature and top-k's k, under the model picker."""
    temperature = st.number_input(
        "Temperature",
        value=ui.link_value("temperature", 0.5, lambda v: v > 0),
        step=0.1,
        format="%.2f",
        key="temperature",
    )
    k = int(
        st.number_input("k of top-k", value=ui.link_value("k", 2, lambda v: 1 <= v <= 64), step=1, key="k")
    )
    return temperature, k


@ui.cached(max_entries=4, spinner="Running the model under each normalizer...")
@ui.heavy
def cached_comparison(loaded, text: str, temperature: float, k: int):
    return soft_hard.compare(loaded, text, soft_hard.NormalizerSettings(temperature, k))


@ui.cached(max_entries=4, spinner="Generating under each normalizer...")
@ui.heavy
def cached_effect(loaded, text: str, temperature: float, k: int, new: int):
    settings = soft_hard.NormalizerSettings(temperature, k)
    return soft_hard.output_effect(loaded, text, settings, new)


@ui.shared_resource()
def shipped_runs():
    return toy.load_runs()


def on_a_real_model(loaded, settings: Settings) -> None:
    """One head under the five normalizers, each head's spread, and the effect on the output."""
    with ui.user_errors():
        comparison = cached_comparison(loaded, settings.text, settings.temperature, settings.k)
    first = next(iter(comparison.traces.values()))
    if first.notice:
        st.warning(f"{first.notice} This page reads at most {soft_hard.MAX_TOKENS} tokens.")

    layer, head = widgets.layer_head_picker(first.n_layers, first.n_heads)
    ui.show_figure(figures.normalizer_heatmaps(comparison, layer, head, ui.presenting()))
    teaching.notice(
        "the same scores under five normalizers: softmax gives every key some weight, top-k and sparsemax set "
        "most weights to exactly zero, hard keeps one key per row; the entropy bars below measure the spread."
    )
    st.caption(
        "Each normalizer runs in every layer, so from layer 1 on the scores themselves differ. "
        "Layer 0 reads the same scores under all five: there the panels differ by the normalizer alone. "
        "Zeros save no work here: every normalizer reads all n² scores first. Efficient transformers that "
        "choose keys by content (Reformer's hashing, the Routing Transformer's clusters) choose them before "
        "scoring; txviz does not show those."
    )
    measures = ["entropy", "keys kept"]
    measure = widgets.linked_radio("Per head", measures, "measure")
    values = comparison.entropy() if measure == "entropy" else comparison.kept_fraction()
    labelled = {comparison.labels[n]: v for n, v in values.items()}
    if measure == "entropy":
        ui.show_figure(figures.entropy_bars(labelled, layer))
    else:
        title, y_title = "Keys given weight per head", "fraction of visible keys with weight > 0"
        ui.show_figure(figures.entropy_bars(labelled, layer, y_title=y_title, title=title))
    effect_on_output(loaded, settings, comparison.labels)


def effect_on_output(loaded, settings: Settings, labels: dict) -> None:
    """A decoder's greedy continuations, or an encoder's sentence embedding, under each normalizer."""
    st.subheader("Effect on the output")
    new_tokens = 8
    if loaded.kind == "decoder":
        new_tokens = st.slider(
            "New tokens (greedy)",
            1,
            soft_hard.MAX_NEW_TOKENS,
            ui.link_value("new_tokens", 8, range(1, soft_hard.MAX_NEW_TOKENS + 1)),
            key="new_tokens",
        )
    with ui.user_errors():
        effect = cached_effect(loaded, settings.text, settings.temperature, settings.k, new_tokens)
    if effect.kind == "decoder":
        st.dataframe(effect.table(labels), hide_index=True)
    else:
        similarity = {labels[n]: v for n, v in effect.similarity.items()}
        ui.show_figure(figures.similarity_bars(similarity))
        st.caption("Sentence embedding: the mean of the last hidden states, as all-MiniLM-L6-v2 pools.")


def training() -> None:
    """The key-value toy trained soft (gradient) and hard (REINFORCE): shipped runs or the reader's."""
    st.markdown(
        "A toy task: each example stores pairs such as `c=7` (16 in the shipped runs), then asks for every stored key "
        "(`c?`). One attention head must find the pair and read its value. **Soft** attention is "
        "trained by gradient descent through the softmax. **Hard** attention samples one pair per "
        "query: that choice has no gradient, so its scores are trained by **REINFORCE** (the "
        "score-function estimator: reward is minus the loss of the value it read, the batch's mean "
        "loss is the baseline, plus a small entropy bonus); at test time it takes the argmax."
    )
    with st.expander("Train both again, live (about 10 to 30 s on one CPU thread)"):
        with st.form("train"):
            seed = int(st.number_input("Seed", value=0, step=1, key="seed"))
            steps = st.slider("Steps", 50, 600, toy.ToyConfig.steps, 50, key="steps")
            n_pairs = st.slider("Stored pairs", 2, 24, toy.ToyConfig.n_pairs, key="n_pairs")
            retrain = st.form_submit_button("Train")
        if retrain:
            with ui.user_errors():
                config = toy.ToyConfig(seed=seed, steps=steps, n_pairs=n_pairs)
            st.session_state["toy_runs"] = widgets.with_progress(
                "Training...", lambda progress: toy.train_both(config, progress)
            )
        if "toy_runs" in st.session_state and st.button("Back to the shipped runs", key="reset"):
            del st.session_state["toy_runs"]
    runs = st.session_state.get("toy_runs") or shipped_runs()
    st.caption("Shipped runs (`python -m txviz train soft_hard`)" if runs is shipped_runs() else "Your run")
    chance = 1 / next(iter(runs.values())).config.n_values
    metrics = ("accuracy", "train_loss", "entropy")
    ui.show_figure(figures.training_curves(toy.curves_by_label(runs), metrics, chance=chance))
    st.caption(
        f"{toy.describe(runs)} Hard attention first learns to read values from random picks, "
        "then its picks improve by trial; soft attention never has to commit, so it stays a little spread."
    )
    st.dataframe(toy.accuracy_rows(runs), hide_index=True)
    example = st.slider("Held-out example", 0, 49, ui.link_value("example", 0, range(50)), key="example")

    ui.show_figure(
        figures.heatmaps_of(toy.attention_maps(runs, example), "query", "stored pair", ui.presenting())
    )


def attention_as_explanation() -> None:
    """What the literature says attention weights do and do not explain."""
    st.info(
        "Attention weights say where a head read from, not why the model answered as it did. "
        "Jain and Wallace (2019, *Attention is not Explanation*, NAACL) found attention often "
        "uncorrelated with gradient-based importance, and different weights giving the same "
        "prediction. Wiegreffe and Pinter (2019, *Attention is not not Explanation*, EMNLP) showed "
        "such alternatives are not always found by training and that whether attention explains "
        "depends on the model and the claim. Serrano and Smith (2019, *Is Attention Interpretable?*, ACL) "
        "zeroed the largest weights and often had to remove many before the decision flipped, where "
        "gradient rankings flipped it sooner; Brunner et al. (2019, *On Identifiability in Transformers*, "
        "ICLR 2020) showed that once a sequence is longer than a head's value size, other weights give the "
        "same output, so the weights are not identifiable. Hard attention makes the choice exact, but the chosen "
        "key is still one step in a computation, not a reason."
    )
