"""The vision transformer page: widgets move without errors, every bad image gets a clear message."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from conftest import ROOT, assert_clean
from PIL import Image
from streamlit.testing.v1 import AppTest
from upload_images import bomb_png, encode, photo

PAGE = "pages/10_Vision_Transformer.py"


def run_page(**state) -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=180)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def figures_titles(at: AppTest) -> list[str]:
    """Titles of the plotly figures the page sent (AppTest sees them as unknown elements)."""
    titles = []
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        titles.append(spec["layout"].get("title", {}).get("text", ""))
    return titles


def test_defaults_show_the_digit_model_and_its_prediction() -> None:
    at = run_page()
    assert_clean(at)
    titles = figures_titles(at)
    assert "Class probabilities" in titles
    assert any(t.startswith("6 x 6 patches of 4 x 4 px") for t in titles)
    assert any(t.startswith("The sequence the model reads: 37 tokens") for t in titles)
    assert "[CLS] attention, layer 3, mean over heads" in titles
    assert any("Held-out accuracy" in c.value for c in at.caption)


def test_moving_every_control() -> None:
    at = run_page()
    at.slider(key="layer").set_value(0).run()
    at.selectbox(key="head").set_value(2).run()
    assert "[CLS] attention, layer 0, head 2" in figures_titles(at)
    at.radio(key="view").set_value("Attention from a patch").run()
    at.slider(key="patch").set_value(7).run()
    assert "Attention from patch 7 (row 1, col 1), layer 0, head 2" in figures_titles(at)
    at.slider(key="opacity").set_value(0.2).run()
    at.slider(key="threshold").set_value(0.5).run()
    at.radio(key="view").set_value("Attention rollout from [CLS]").run()
    at.slider(key="layer").set_value(2).run()
    assert "Attention rollout from [CLS] through layers 0 to 2" in figures_titles(at)
    assert_clean(at)


@pytest.mark.parametrize(
    "sample", ["photo: china.jpg (scikit-learn)", "shapes: shapes-1", "digit 9 (held out from training)"]
)
def test_samples(sample: str) -> None:
    at = run_page(sample=sample)
    assert_clean(at)
    assert len(figures_titles(at)) == 7  # grid, bars, sequence, overlay, head stats, ablation, curves


def test_a_photo_on_the_digit_model_gets_a_note_on_what_it_knows() -> None:
    at = run_page(sample="photo: china.jpg (scikit-learn)")
    assert_clean(at)
    assert any("knows only 8 x 8" in i.value and "colour" in i.value for i in at.info)
    at.selectbox(key="sample").set_value("digit 3 (held out from training)").run()
    assert not any("knows only 8 x 8" in i.value for i in at.info)  # a digit is what it knows


def upload_page() -> AppTest:
    at = run_page(image_source="Upload")
    assert at.info[0].value.startswith("Choose an image")
    return at


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key="upload").set_value((name, data, "application/octet-stream"))
    return at.run()


def gif_bytes() -> bytes:
    frames = [Image.new("RGB", (16, 16), c) for c in ("red", "green")]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:])
    return buffer.getvalue()


def sixteen_bit_png() -> bytes:
    ramp = np.linspace(0, 65535, 32 * 32).reshape(32, 32).astype(np.uint16)
    return encode(Image.fromarray(ramp), "PNG")


BAD_UPLOADS = [
    ("notes.png", b"just some text, not a picture\n" * 10, "not an image"),
    ("cut.jpg", encode(photo(size=(120, 120)), "JPEG")[:600], "truncated or damaged"),
    ("half.jpg", (lambda d: d[: len(d) // 2])(encode(photo(size=(120, 120)), "JPEG")), "truncated"),
    ("bomb.png", bomb_png(20_000), "400,000,000 pixels"),
    ("dot.png", encode(Image.new("RGB", (1, 1)), "PNG"), "only 1 x 1 pixels"),
]

UNUSUAL_UPLOADS = [
    ("grey.png", encode(photo("L"), "PNG"), "Grayscale"),
    ("alpha.png", encode(photo("RGBA"), "PNG"), "white background"),
    ("print.jpg", encode(photo("CMYK"), "JPEG"), "CMYK"),
    ("deep.png", sixteen_bit_png(), "High bit-depth"),
    ("moving.gif", gif_bytes(), "first frame"),
    ("photo.webp", encode(photo(), "WEBP"), None),
]


def test_bad_uploads_get_a_clear_message() -> None:
    at = upload_page()
    for name, data, message in BAD_UPLOADS:
        upload(at, name, data)
        assert not at.exception, name
        assert len(at.error) == 1 and message in at.error[0].value, name
        assert figures_titles(at) == [], name  # stopped before anything half-done was drawn


def test_unusual_uploads_are_converted_with_a_note() -> None:
    at = upload_page()
    for name, data, note in UNUSUAL_UPLOADS:
        upload(at, name, data)
        assert_clean(at, name)
        if note:
            assert any(note in info.value for info in at.info), name
        assert len(figures_titles(at)) == 7, name  # the ablation figure too


def test_the_data_hunger_section_shows_the_shipped_curves() -> None:
    at = run_page()
    assert_clean(at)
    titles = figures_titles(at)
    assert any(
        t.startswith("Held-out accuracy (360 images) against the training images used") for t in titles
    )
    assert any("With 50 images the CNN scores" in m.value for m in at.markdown)


def test_ablating_a_head_shows_the_class_probability_before_and_after() -> None:
    at = run_page()
    assert_clean(at)
    assert "Class probabilities with and without layer 0, head 0" in figures_titles(at)
    at.slider(key="ablate_layer").set_value(0).run()
    at.slider(key="ablate_head").set_value(3).run()
    assert_clean(at)
    assert "Class probabilities with and without layer 0, head 3" in figures_titles(at)
    (line,) = [t.value for t in at.text if t.value.startswith("Head 3 of layer 0 set to zero")]
    assert " goes from 99.7% to 98.8% " in line, line  # the digit-0 sample, as the numbers test computes
    at.slider(key="ablate_layer").set_value(3).run()
    assert_clean(at)
    assert "Class probabilities with and without layer 3, head 3" in figures_titles(at)
