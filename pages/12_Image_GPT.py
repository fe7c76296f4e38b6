"""Image GPT: a transformer decoder draws digits pixel by pixel, and completes the lower half of one."""

import time

import numpy as np
import streamlit as st

from txviz.app import teaching, ui
from txviz.generation.sampling import SamplingSettings
from txviz.imagegpt import data, drawing, figures
from txviz.vision.images import load_image

MODEL = "digits-imagegpt"
VIEWS = ["Draw", "Complete a held-out digit", "Your own image", "How good is it?"]
DIGITS = ["any digit"] + [str(d) for d in range(10)]
FIGURE_INTERVAL_S = 0.4  # live figures redraw at most this often; the image every pixel
REPLAY_PIXEL = 36  # row 4, column 4: mid-digit; the last pixels are nearly always black

ui.setup_page(
    "Image_GPT",
    "Pixels as tokens: a small GPT-2 reads an 8 x 8 digit as 64 pixels in raster order, each one of "
    f"{data.N_LEVELS} grey levels, and draws one pixel at a time, each from a distribution over the "
    f"{data.N_LEVELS} levels that depends on every pixel "
    "before it (Understanding Deep Learning, fig. 12.16). Given the top half, it completes the rest.",
)
loaded = ui.load_model(MODEL, kinds=("image-decoder",))
meta = loaded.meta


def digit_of(choice: str) -> int | None:
    return None if choice == DIGITS[0] else int(choice)


@ui.cached(max_entries=32, spinner=False)
@ui.heavy
def drawn(loaded, digit: int | None, temperature: float, top_k: int, seed: int) -> list[drawing.PixelStep]:
    # Cached for every session: the same seed always draws the same image.
    return list(drawing.draw(loaded, digit, SamplingSettings(temperature, top_k, seed=seed)))


@ui.shared_resource(max_entries=1)
def held_out() -> tuple[np.ndarray, np.ndarray]:
    _, x_test, _, y_test = data.split()
    return x_test, y_test


def sampling_controls(prefix: str) -> SamplingSettings:
    a, b, c = st.columns(3)
    temperature = a.slider(
        "Temperature (0 = most likely level)", 0.0, 2.0, 1.0, 0.05, key=f"{prefix}_temperature"
    )
    top_k = b.slider("Top-k (0 = off)", 0, data.N_LEVELS, 0, key=f"{prefix}_top_k")
    seed = c.number_input("Seed", min_value=0, value=0, step=1, key=f"{prefix}_seed")
    return SamplingSettings(float(temperature), int(top_k), seed=int(seed))


def show_step(steps: list[drawing.PixelStep], index: int, slots=None, keys: str = "step") -> None:
    """The image up to pixel `index`, its distribution, and every head's attention on the grid."""
    step = steps[index]
    row, col = divmod(step.index, data.SIDE)
    title = f"Pixel {step.index} (row {row}, column {col}): grey level {step.level}"
    left, right = (slots or ui.figure_columns(2))[:2]
    with left:
        ui.show_figure(figures.canvas_figure(step.pixels, step.index, title), key=f"{keys}_canvas")
    with right:
        ui.show_figure(
            figures.distribution_figure(
                step.before, step.after, step.level, "Next pixel: distribution over grey levels"
            ),
            key=f"{keys}_bars",
        )
    ui.show_figure(
        figures.heads_on_image(
            step.attention,
            step.index,
            f"Where each head looks while drawing pixel {step.index} (red)",
            ui.presenting(),
        ),
        key=f"{keys}_heads",
    )


st.caption(
    f"{loaded.description} Held-out: {meta.get('heldout_bits_per_pixel', float('nan')):.3f} bits per pixel "
    f"({meta.get('heldout_bits_per_pixel_given_class', float('nan')):.3f} told the digit) against "
    f"{meta.get('baseline_marginal_bits_per_pixel', float('nan')):.3f} for each position's marginal and "
    f"{meta.get('baseline_previous_pixel_bits_per_pixel', float('nan')):.3f} seeing only the previous pixel."
)

draw_tab, complete_tab, upload_tab, numbers_tab = st.tabs(
    VIEWS, key="view", on_change="rerun", default=ui.link_tab("view", VIEWS)
)

if draw_tab.open:
    digit_choice = st.selectbox(
        "Draw", DIGITS, index=DIGITS.index(ui.link_value("igpt_digit", "7", DIGITS)), key="igpt_digit"
    )
    settings = sampling_controls("draw")
    digit = digit_of(digit_choice)
    live = st.button("Draw live, pixel by pixel", type="primary", key="igpt_live")
    if live:
        canvas_slot, bars_slot, heads_slot = st.empty(), st.empty(), st.empty()
        shown = 0.0
        with ui.user_errors():
            for step in drawing.draw(loaded, digit, settings):
                row, col = divmod(step.index, data.SIDE)
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

if complete_tab.open:
    images, labels = held_out()
    number = st.slider(
        "Held-out example",
        0,
        len(images) - 1,
        ui.link_value("igpt_heldout", 0, range(len(images))),
        key="igpt_heldout",
    )
    told = st.toggle(
        "Tell the model which digit it is", value=ui.link_value("igpt_told", False), key="igpt_told"
    )
    settings = sampling_controls("complete")
    image, label = images[number].astype(np.int64), int(labels[number])
    with ui.user_errors():
        samples = drawing.complete(loaded, image, label if told else None, 3, settings)
    top = np.where(np.arange(data.N_PIXELS).reshape(data.SIDE, data.SIDE) < drawing.HALF, image, -1)
    titles = ["the top half given", *[f"completion {i + 1}" for i in range(3)], f"the original (a {label})"]
    ui.show_figure(
        figures.digits_row(
            [top, *samples, image], titles, f"Completing a held-out {label} (example {number}): three samples"
        ),
        key="completions",
    )
    st.caption(
        "The top four rows are given and kept; the model draws the lower 32 pixels one by one. "
        "The digits-vit split: this digit was never seen by either model in training."
    )

if upload_tab.open:
    upload = st.file_uploader(
        "A picture of one digit (PNG, JPEG, WebP, GIF)",
        type=["png", "jpg", "jpeg", "webp", "gif"],
        key="igpt_upload",
    )
    if upload is None:
        st.info(
            "Choose an image of a single digit. It will be reduced to the model's 8 x 8 grid of 17 grey levels."
        )
    else:
        with ui.user_errors():
            picture = load_image(upload.getvalue())
            grid, notes = data.image_to_grid(picture.image)
        for note in picture.notes:
            st.info(note)
        st.info(data.describe(notes))
        settings = sampling_controls("upload")
        with ui.user_errors():
            samples = drawing.complete(loaded, grid, None, 3, settings)
        bits = drawing.image_bits(loaded, grid)
        top = np.where(np.arange(data.N_PIXELS).reshape(data.SIDE, data.SIDE) < drawing.HALF, grid, -1)
        titles = ["your image, 8 x 8", "its top half", *[f"completion {i + 1}" for i in range(3)]]
        ui.show_figure(
            figures.digits_row([grid, top, *samples], titles, "Your image as the model sees it"),
            key="upload_row",
        )
        st.caption(
            f"The model gives your image {bits:.2f} bits per pixel (held-out digits: {meta.get('heldout_bits_per_pixel', float('nan')):.2f})."
        )

if numbers_tab.open:
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
