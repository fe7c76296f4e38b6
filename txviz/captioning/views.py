"""The Image Captioning page: the canvas chosen, then what each captioner writes and where it looks."""

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.captioning import figures, store
from txviz.captioning.canvas import MAX_DIGITS
from txviz.captioning.evaluate import held_out_canvases
from txviz.captioning.runs import from_image, photo_note, random_canvas, write
from txviz.vision.images import load_image

SOURCES = ["Held-out canvas", "New random canvas", "Upload"]
FIRST_CANVAS = 6  # a held-out canvas both captioners read right; 0, 2 and 13 are ones they misread


@dataclass(frozen=True, eq=False)
class Canvas:
    """The canvas to caption, and its right caption when it is known (not for an upload)."""

    pixels: np.ndarray
    truth: str | None


@ui.shared_resource(spinner="Loading the captioners...")
def captioners():
    return store.load()


@ui.shared_resource(max_entries=1)
def held_out():
    return held_out_canvases()


def scores_caption(meta: dict) -> None:
    """How well each captioner does on the held-out canvases."""
    st.caption(
        meta["description"]
        + " Held-out canvases: "
        + "; ".join(
            f"{m} attention writes {r['exact_caption_accuracy']:.1%} of captions exactly, "
            f"{r['word_accuracy']:.1%} of words, and looks at the right digit for {r['localisation']:.1%} of them"
            for m, r in meta["runs"].items()
        )
        + "."
    )


def choose_canvas() -> Canvas:
    """A held-out canvas, a new random one or an upload; the run stops until an upload is chosen."""
    x_test, y_test, heldout = held_out()
    source = st.radio(
        "Canvas",
        SOURCES,
        horizontal=True,
        key="cap_source",
        index=SOURCES.index(ui.link_value("cap_source", SOURCES[0], SOURCES)),
    )
    if source == SOURCES[0]:
        index = st.slider(
            "Held-out canvas",
            0,
            len(heldout) - 1,
            ui.link_value("cap_index", FIRST_CANVAS, range(len(heldout))),
            key="cap_index",
            help=f"Canvas {FIRST_CANVAS} is one both captioners read right. Canvases 0, 2 and 13 are ones they "
            "misread: slide to them to see where each captioner looked instead.",
        )
        return Canvas(heldout.pixels[index], " ".join(heldout.words(index)))
    if source == SOURCES[1]:
        left, right = st.columns(2)
        digit_counts = [2, 3, 4, 5, 6]
        n_digits = left.selectbox(
            "Digits on the canvas",
            digit_counts,
            index=ui.link_index("cap_digits", digit_counts, 1),
            key="cap_digits",
        )
        seed = widgets.linked_count("Canvas seed", "cap_seed", where=right)
        with ui.user_errors():
            canvas = random_canvas(x_test, y_test, int(n_digits), int(seed))
        return Canvas(canvas.pixels[0], " ".join(canvas.words(0)))
    upload = st.file_uploader(
        f"A picture of 2 to {MAX_DIGITS} digits, one per quadrant (PNG, JPEG, WebP, GIF)",
        type=["png", "jpg", "jpeg", "webp", "gif"],
        key="cap_upload",
    )
    if upload is None:
        st.info(
            "Choose an image. It will be reduced to the captioners' 32 x 32 canvas of grey levels 0..16 "
            "(a picture that is not square is stretched to fill it)."
        )
        st.stop()
    with ui.user_errors():
        picture = load_image(upload.getvalue())
        pixels, notes = from_image(picture.image)
    for note in picture.notes:
        st.info(note)
    st.info(", ".join(notes) + ".")
    st.info(photo_note(picture.image))
    return Canvas(pixels, None)


def hard_sample() -> int:
    """Which sample of hard attention's locations to show: a button draws the next one."""
    if "cap_sample" not in st.session_state:
        st.session_state["cap_sample"] = ui.link_value("cap_sample", 0, lambda v: v >= 0)
    if st.button("Resample hard attention's locations", key="cap_resample"):
        st.session_state["cap_sample"] += 1
    return st.session_state["cap_sample"]


def captions(models, runs: dict, canvas: Canvas) -> None:
    """Each captioner's caption, where it looks while writing each word, and the measured scores."""
    sample = hard_sample()
    pixels = canvas.pixels
    written = write(models, np.asarray(pixels), sample)
    left, right = ui.figure_columns([1, 2])
    with left:
        ui.show_figure(figures.canvas_figure(pixels, "The canvas and its 8 x 8 patches"), key="canvas")
        teaching.notice(
            "the captioners see 64 patches, not digits: the panels below show which patches each one reads while "
            "writing each word."
        )
    with right:
        table = {"captioner": [], "caption": []}
        if canvas.truth is not None:
            table["captioner"].append("the right caption")
            table["caption"].append(canvas.truth)
        for method, w in written.items():
            table["captioner"].append(f"{method} attention")
            table["caption"].append(w.text)
        st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
        st.caption(
            f"Hard attention's locations are sample {sample}; resampling can change what it reads and writes."
        )
    rows = [
        ("soft", written["soft"].words, written["soft"].weights, None),
        ("hard", written["hard"].words, written["hard"].weights, written["hard"].chosen),
    ]
    ui.show_figure(
        figures.word_attention_figure(pixels, rows, "Where each captioner looks while writing each word"),
        key="words",
    )
    st.caption(
        "Orange: the attention while writing the word above it. Soft attention reads a weighted mean of every "
        "patch; hard attention reads the one patch outlined in red, sampled from its distribution. The last "
        "panel is the step that wrote the end of the caption."
    )
    ui.show_figure(figures.scores_figure(runs), key="scores")
    st.caption(
        f"Measured on {runs['soft']['canvases']} fixed canvases of held-out digits (never trained on). Localisation: "
        "the patch read (hard) or the most attended patch (soft) overlaps the box of the digit being named. "
        f"Hard attention with arg-max locations instead of samples: "
        f"{runs['hard']['argmax_locations']['exact_caption_accuracy']:.1%} exact captions."
    )
