"""The Image GPT page's tabs: draw a digit pixel by pixel, complete a held-out or uploaded one, the scores."""

import time

import numpy as np
import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.generation.sampling import SamplingSettings
from txviz.imagegpt import data, drawing, figures
from txviz.vision.images import load_image

MODEL = "digits-imagegpt"
DIGITS = ["any digit"] + [str(d) for d in range(10)]
FIGURE_INTERVAL_S = 0.4  # live figures redraw at most this often; the image every pixel
REPLAY_PIXEL = 36  # row 4, column 4: mid-digit; the last pixels are nearly always black
SAMPLES = 3  # completions drawn of each top half


@ui.cached(max_entries=32, spinner=False)
@ui.heavy
def drawn(loaded, digit: int | None, temperature: float, top_k: int, seed: int) -> list[drawing.PixelStep]:
    # Cached for every session: the same seed always draws the same image.
    return list(drawing.draw(loaded, digit, SamplingSettings(temperature, top_k, seed=seed)))


@ui.shared_resource(max_entries=1)
def held_out() -> tuple[np.ndarray, np.ndarray]:
    _, x_test, _, y_test = data.split()
    return x_test, y_test


def model_caption(loaded) -> None:
    """The model's held-out bits per pixel against its two baselines."""
    meta = loaded.meta
    st.caption(
        f"{loaded.description} Held-out: {meta.get('heldout_bits_per_pixel', float('nan')):.3f} bits per pixel "
        f"({meta.get('heldout_bits_per_pixel_given_class', float('nan')):.3f} told the digit) against "
        f"{meta.get('baseline_marginal_bits_per_pixel', float('nan')):.3f} for each position's marginal and "
        f"{meta.get('baseline_previous_pixel_bits_per_pixel', float('nan')):.3f} seeing only the previous pixel."
    )


def sampling_controls(prefix: str) -> SamplingSettings:
    a, b, c = st.columns(3)
    temperature = a.slider(
        "Temperature (0 = most likely level)", 0.0, 2.0, 1.0, 0.05, key=f"{prefix}_temperature"
    )
    top_k = b.slider("Top-k (0 = off)", 0, data.N_LEVELS, 0, key=f"{prefix}_top_k")
    seed = c.number_input("Seed", min_value=0, value=0, step=1, key=f"{prefix}_seed")
    return SamplingSettings(float(temperature), int(top_k), seed=int(seed))


def top_half(image: np.ndarray) -> np.ndarray:
    """The image with its lower half blank (-1): what a completion is given."""
    return np.where(np.arange(data.N_PIXELS).reshape(data.SIDE, data.SIDE) < drawing.HALF, image, -1)


def show_step(steps: list[drawing.PixelStep], index: int) -> None:
    """The image up to pixel `index`, its distribution, and every head's attention on the grid."""
    step = steps[index]
    row, col = divmod(step.index, data.SIDE)
    title = f"Pixel {step.index} (row {row}, column {col}): grey level {step.level}"
    left, right = ui.figure_columns(2)
    with left:
        ui.show_figure(figures.canvas_figure(step.pixels, step.index, title), key="step_canvas")
    with right:
        ui.show_figure(
            figures.distribution_figure(
                step.before, step.after, step.level, "Next pixel: distribution over grey levels"
            ),
            key="step_bars",
        )
    ui.show_figure(
        figures.heads_on_image(
            step.attention,
            step.index,
            f"Where each head looks while drawing pixel {step.index} (red)",
            ui.presenting(),
        ),
        key="step_heads",
    )


def draw_live(loaded, digit: int | None, settings: SamplingSettings) -> None:
    """Draw while the reader watches: the image every pixel, the bars and heads at most every interval."""
    canvas_slot, bars_slot, heads_slot = st.empty(), st.empty(), st.empty()
    shown = 0.0
    with ui.user_errors():
        for step in drawing.draw(loaded, digit, settings):
            with canvas_slot.container():
                ui.show_figure(
                    figures.canvas_figure(step.pixels, step.index, f"Drawing pixel {step.index} of 64"),
                    key=f"live_canvas_{step.index}",
                )
            if time.perf_counter() - shown > FIGURE_INTERVAL_S:
                with bars_slot.container():
                    ui.show_figure(
                        figures.distribution_figure(
                            step.before, step.after, step.level, f"Pixel {step.index}"
                        ),
                        key=f"live_bars_{step.index}",
                    )
                with heads_slot.container():
                    ui.show_figure(
                        figures.heads_on_image(
                            step.attention, step.index, f"Heads at pixel {step.index}", ui.presenting()
                        ),
                        key=f"live_heads_{step.index}",
                    )
                shown = time.perf_counter()
    for slot in (canvas_slot, bars_slot, heads_slot):
        slot.empty()


def draw(loaded) -> None:
    """A digit drawn pixel by pixel (live on request), then replayed pixel by pixel with every head."""
    digit_choice = st.selectbox(
        "Draw", DIGITS, index=DIGITS.index(ui.link_value("igpt_digit", "7", DIGITS)), key="igpt_digit"
    )
    settings = sampling_controls("draw")
    digit = None if digit_choice == DIGITS[0] else int(digit_choice)
    if st.button("Draw live, pixel by pixel", type="primary", key="igpt_live"):
        draw_live(loaded, digit, settings)
    with ui.user_errors():
        steps = drawn(loaded, digit, settings.temperature, settings.top_k, settings.seed)
    st.caption(
        f"Drawn with {settings.describe()}, seed {settings.seed}. "
        + (
            "The first token says which digit to draw."
            if digit is not None
            else "The first token says 'any digit'."
        )
    )
    index = st.slider(
        "Replay: pixel",
        0,
        data.N_PIXELS - 1,
        ui.link_value("igpt_pixel", REPLAY_PIXEL, range(data.N_PIXELS)),
        key="igpt_pixel",
    )
    show_step(steps, index)
    teaching.notice(
        "the model draws one pixel at a time from the pixels above and to the left, like a language model "
        "writing words: each head's panel shows which earlier pixels it reads."
    )
    st.caption(
        "Each panel is one head of one layer: the red square is the pixel being drawn, colours are the "
        "attention of its query (the previous token) on every earlier pixel; 'class' is the weight on the first "
        "token. Rows of the image arrive one after another, so a head that looks one row up sees the pixel above."
    )


def complete_held_out(loaded) -> None:
    """Three completions of a held-out digit's top half, beside the original."""
    images, labels = held_out()
    number = st.slider(
        "Held-out example",
        0,
        len(images) - 1,
        ui.link_value("igpt_heldout", 0, range(len(images))),
        key="igpt_heldout",
    )
    told = widgets.linked_toggle("Tell the model which digit it is", "igpt_told")
    settings = sampling_controls("complete")
    image, label = images[number].astype(np.int64), int(labels[number])
    with ui.user_errors():
        samples = drawing.complete(loaded, image, label if told else None, SAMPLES, settings)
    titles = [
        "the top half given",
        *[f"completion {i + 1}" for i in range(SAMPLES)],
        f"the original (a {label})",
    ]
    ui.show_figure(
        figures.digits_row(
            [top_half(image), *samples, image],
            titles,
            f"Completing a held-out {label} (example {number}): three samples",
        ),
        key="completions",
    )
    st.caption(
        "The top four rows are given and kept; the model draws the lower 32 pixels one by one. "
        "The digits-vit split: this digit was never seen by either model in training."
    )


def own_image(loaded) -> None:
    """An uploaded picture reduced to the model's grid, its completions and its bits per pixel."""
    upload = st.file_uploader(
        "A picture of one digit (PNG, JPEG, WebP, GIF)",
        type=["png", "jpg", "jpeg", "webp", "gif"],
        key="igpt_upload",
    )
    if upload is None:
        st.info(
            "Choose an image of a single digit. It will be reduced to the model's 8 x 8 grid of 17 grey levels."
        )
        return
    with ui.user_errors():
        picture = load_image(upload.getvalue())
        grid, notes = data.image_to_grid(picture.image)
    for note in picture.notes:
        st.info(note)
    st.info(data.describe(notes))
    settings = sampling_controls("upload")
    with ui.user_errors():
        samples = drawing.complete(loaded, grid, None, SAMPLES, settings)
    bits = drawing.image_bits(loaded, grid)
    titles = ["your image, 8 x 8", "its top half", *[f"completion {i + 1}" for i in range(SAMPLES)]]
    ui.show_figure(
        figures.digits_row([grid, top_half(grid), *samples], titles, "Your image as the model sees it"),
        key="upload_row",
    )
    held_out_bits = loaded.meta.get("heldout_bits_per_pixel", float("nan"))
    st.caption(
        f"The model gives your image {bits:.2f} bits per pixel (held-out digits: {held_out_bits:.2f})."
    )


def how_good(loaded) -> None:
    """Held-out bits per pixel, and how often digits-vit recognises the digit asked for."""
    meta = loaded.meta
    if "heldout_bits_per_pixel" in meta:
        ui.show_figure(figures.bits_figure(meta), key="bits")
    if "vit_recognises_generated" in meta:
        st.caption(
            "Told to draw a k, does it? digits-vit "
            + (
                f"({meta['vit_heldout_accuracy']:.1%} right on real held-out digits) "
                if "vit_heldout_accuracy" in meta
                else ""
            )
            + "calls "
            f"{meta['vit_recognises_generated']:.1%} of {meta['vit_generated_images']} generated digits "
            "(temperature 1) by the digit asked for. Per digit 0..9: "
            + ", ".join(f"{v:.0%}" for v in meta["vit_recognises_generated_per_digit"])
            + "."
        )
