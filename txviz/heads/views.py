"""The Head Detectors page's tabs: every head scored per behaviour, attention against attribution, two
models side by side."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.figures import grids
from txviz.figures.attention import attention_heatmap
from txviz.heads import attribution, compare, corpus, figures, runs
from txviz.heads import stored as heads_stored

NEXT_TOKEN_TEXT = "The capital of France is"
SIMILARITY_TEXTS = ("A man is playing a guitar on stage.", "Someone performs music with an instrument.")
TABLE_PAGE_ROWS = 1000  # a model with thousands of heads gets its table in pages
PICKED = ("pick_layer", "pick_head")  # the picked head's keys: the grid, the table and links set them
KINDS = ("encoder", "decoder")


@dataclass(frozen=True)
class Settings:
    """The model's name and what the heads are scored on: texts, repeated random sequences, offset k."""

    name: str
    texts: corpus.Corpus
    repeats: runs.RepeatSettings
    offset: int


def corpus_controls(name: str) -> Settings:
    """The texts to score on and the repeated random sequences' settings, above the tabs."""
    texts = widgets.corpus_input("corpus", corpus.DEFAULT_TEXTS[0], label="Texts the heads are scored on")
    st.caption(
        f"{len(texts.texts)} passage(s), each cut to {corpus.MAX_TOKENS} tokens. Duplicate-token and induction "
        "heads are scored on random one-token words said twice (Olsson et al. 2022)."
    )
    with st.expander("Settings: the repeated random sequences and the offset k"):
        a, b, c, d = st.columns(4)
        n = a.number_input("Sequences", 1, 32, 4, key="rep_n")
        length = b.number_input("Words per sequence", 2, 60, 20, key="rep_len")
        seed = c.number_input("Seed", 0, 2**31 - 1, 0, key="rep_seed")
        offset = d.number_input("Offset k (+-k detectors)", 2, 8, 2, key="offset")
    if texts.notice:
        st.warning(texts.notice)
    return Settings(name, texts, runs.RepeatSettings(int(n), int(length), int(seed)), int(offset))


@ui.cached(max_entries=8, progress="Scoring heads...")
@ui.heavy
def _scores(loaded, texts: corpus.Corpus, repeats: runs.RepeatSettings, offset: int, progress):
    return runs.score_heads(loaded, texts, repeats, offset, progress=progress)


def scored(loaded, settings: Settings) -> runs.HeadScores:
    """The heads' scores, computed once per model, corpus and settings, with a progress bar; the shipped
    texts' are stored on disk after their first computation and read on every later open."""
    texts, repeats, offset = settings.texts, settings.repeats, settings.offset
    with ui.user_errors():
        found = heads_stored.find(loaded, texts, repeats, offset)
        if found is None:
            found = _scores(loaded, texts, repeats, offset)
            heads_stored.save(loaded, texts, repeats, offset, found)
        return found


def _pick_from_table(n_heads: int) -> None:
    rows = st.session_state["heads_table"].selection.rows
    if rows:
        layer, head = divmod(st.session_state["_table_offset"] + rows[0], n_heads)
        st.session_state["pick_layer"], st.session_state["pick_head"] = layer, head


def explorer_link(loaded, name: str, result: runs.HeadScores, detector: str, layer: int, head: int) -> None:
    """A link to the Attention Explorer on this head and the text where it scored highest."""
    index = int(result.best_text[detector][layer, head])
    text = result.texts[max(index, 0)]
    widgets.explorer_head_link(name, text, layer, head)
    if loaded.kind == "decoder":  # ablation reads next-token logits: decoders only
        widgets.ablate_head_link(name, text, layer, head, "this text")
    widgets.why_attend_link(name, text, layer, head)
    st.caption("On the text that gave it its highest score:")
    st.text(text[:300] + ("..." if len(text) > 300 else ""))


def detectors(loaded, settings: Settings) -> None:
    """One detector's scores as a head grid, the picked head's links, and every head's table."""
    result = scored(loaded, settings)
    if result.notice:
        st.warning(result.notice)
    by_name = {d.name: d for d in result.detectors}
    names = list(by_name)
    chosen = st.selectbox(
        "Detector",
        names,
        key="detector",
        format_func=lambda n: by_name[n].label,
        index=names.index(ui.link_value("detector", "previous_token", names)),
    )
    detector = by_name[chosen]
    st.caption(
        f"{detector.label}: {detector.description}. Scored on the "
        + ("corpus texts." if detector.on == "text" else "repeated random sequences.")
    )
    layers, heads = result.shape
    left, right = ui.figure_columns([3, 2])
    with right:
        layer, head = widgets.layer_head_picker(
            layers, heads, PICKED, widget="number", columns=(st.container(), st.container())
        )
        st.metric(f"{detector.label} score", f"{result.scores[detector.name][layer, head]:.3f}")
        explorer_link(loaded, settings.name, result, detector.name, layer, head)
        best = figures.top_heads(result, detector.name)
        st.caption("Highest: " + ", ".join(f"L{la}H{h} {s:.2f}" for la, h, s in best))
    with left:
        title = f"{settings.name}: {detector.label} (click a head to pick it)"
        grid = grids.head_grid(
            result.scores[detector.name], title, "score", (layer, head), ui.presenting(), (0, 1)
        )
        widgets.head_grid(grid, "detector_grid", PICKED)
        teaching.notice(
            "each cell scores one head for this behaviour (previous token, sink, induction, ...); the "
            "behaviour sits in a few heads, and the Explorer link shows the pattern the score measures."
        )
    st.subheader("Every head (click a row to pick it; click a column header to sort)")
    table = figures.score_table(result)
    offset = 0
    if len(table) > TABLE_PAGE_ROWS:
        pages = -(-len(table) // TABLE_PAGE_ROWS)
        page = st.number_input(
            f"Table page (of {pages}, {TABLE_PAGE_ROWS} heads each)", 1, pages, 1, key="table_page"
        )
        offset = (page - 1) * TABLE_PAGE_ROWS
        table = table.iloc[offset : offset + TABLE_PAGE_ROWS]
    st.session_state["_table_offset"] = offset
    st.dataframe(
        table,
        hide_index=True,
        key="heads_table",
        on_select=functools.partial(_pick_from_table, loaded.n_heads),
        selection_mode="single-row",
        height=360,
    )
    ui.show_figure(figures.all_detectors(result, ui.presenting()), key="all_detectors")
    st.caption(
        f"{len(result.texts)} texts scored in {result.seconds:.1f} s. NaN (blank) means the "
        "behaviour could not occur in these texts, e.g. [SEP] in a model that has none."
    )


@ui.cached(max_entries=8, spinner="Running gradients and integrated gradients...")
@ui.heavy
def compared(loaded, text: str, other: str, skip_special: bool):
    if loaded.kind == "decoder":
        return attribution.explain_next_token(loaded, text, skip_special)
    return attribution.explain_similarity(loaded, text, other, skip_special)


def attention_vs_attribution(loaded, settings: Settings) -> None:
    """For one prediction: attention, rollout, gradient x input and integrated gradients side by side."""
    st.caption(
        "Is attention an explanation? For one prediction, four per-token measures side by side: the last "
        "layer's attention (mean of heads), attention rollout (Abnar & Zuidema 2020), gradient x input and "
        "integrated gradients (Sundararajan et al. 2017, computed by Captum). If attention explained the "
        "prediction, its ranks would agree with the gradients' "
        "(Jain & Wallace 2019; Wiegreffe & Pinter 2019)."
    )
    decoder = loaded.kind == "decoder"
    default = NEXT_TOKEN_TEXT if decoder else SIMILARITY_TEXTS[0]
    text = st.text_input(
        "Text" if decoder else "Sentence A (explained)",
        ui.link_value("attr_text", default),
        key="attr_text",
        max_chars=ui.max_text_chars(2000),
    )
    other = (
        ""
        if decoder
        else st.text_input(
            "Sentence B",
            ui.link_value("attr_other", SIMILARITY_TEXTS[1]),
            key="attr_other",
            max_chars=ui.max_text_chars(2000),
        )
    )
    skip = widgets.linked_toggle(
        "Leave special tokens ([CLS], [SEP]) and a decoder's first token out of the ranks",
        "attr_skip",
        True,
        help="They are kept in the integrated-gradients baseline, so they get no attribution; "
        "attention sinks on them.",
    )
    if not text.strip() or not (decoder or other.strip()):
        st.warning("The text is empty: type a sentence first.")
        return
    with ui.user_errors():
        result = compared(loaded, text, other, skip)
    if result.notice:
        st.warning(result.notice)
    st.write(f"Explained: {result.target}.")
    widgets.side_by_side(
        [figures.measure_bars(result), figures.correlation_heatmap(result)],
        keys=["attr_bars", "attr_rho"],
        widths=[3, 2],
    )
    st.caption(
        f"Attributions are absolute values summed over the embedding, then scaled to sum 1. Integrated "
        f"gradients: {attribution.IG_STEPS} steps from a baseline of zero embeddings (special tokens and a "
        f"decoder's first token kept); they add up to the change {result.change:.3f} within "
        f"{result.ig_delta:.3f} (0 is an exact path integral). {result.seconds:.1f} s. "
        + ("Tokens marked * are left out of the ranks." if not result.compared.all() else "")
    )


def two_models(loaded, settings: Settings) -> None:
    """A second model's heads beside this one's: grids, per-layer profiles, one head of each."""
    other_name = ui.model_picker(kinds=KINDS, default="smollm2", key="model_b", label="Second model")
    other = ui.load_model(other_name, kinds=KINDS)
    a, b = scored(loaded, settings), scored(other, settings)
    names = [d.name for d in a.detectors]
    labels = {d.name: d.label for d in a.detectors}
    detector = st.selectbox(
        "Detector",
        names,
        index=ui.link_index("cmp_detector", names),
        key="cmp_detector",
        format_func=labels.get,
    )
    widgets.side_by_side(
        [
            grids.head_grid(
                result.scores[detector],
                f"{result.model_name}: {labels[detector]}",
                "score",
                None,
                ui.presenting(),
                (0, 1),
            )
            for result in (a, b)
        ],
        keys=["cmp_grid_False", "cmp_grid_True"],
    )
    st.subheader("Per layer, on a common depth axis")
    columns = st.columns(3)
    for column, quantity in zip(columns, (*compare.QUANTITIES, detector), strict=True):
        with column:
            ui.show_figure(figures.depth_profiles(a, b, quantity), key=f"cmp_depth_{quantity}")
    st.subheader("One head of each")
    rel = widgets.linked_slider("Relative depth (0 = first layer, 1 = last)", "cmp_rel_depth", 0.5, 0.05)

    text = st.selectbox("Text", settings.texts.texts, key="cmp_text", format_func=lambda t: t[:80])
    left, right = st.columns(2)
    for column, result, loaded_model, side in ((left, a, loaded, "a"), (right, b, other, "b")):
        with column:
            layer = compare.layer_at(rel, result.shape[0])
            best = int(np.nan_to_num(result.scores[detector][layer], nan=-1.0).argmax())
            head = st.number_input(
                f"{result.model_name}: head (layer {layer})",
                0,
                result.shape[1] - 1,
                best,
                key=f"cmp_head_{side}",
            )
            with ui.user_errors():
                trace = ui.cached_trace(loaded_model, text)
            ui.show_figure(
                attention_heatmap(
                    trace.head(layer, int(head)),
                    trace.query_tokens,
                    trace.key_tokens,
                    f"{result.model_name}: layer {layer}, head {int(head)}",
                    presenting=ui.presenting(),
                ),
                key=f"cmp_head_fig_{side}",
            )
