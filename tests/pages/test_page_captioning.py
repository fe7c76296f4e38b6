"""The Image Captioning page: every canvas source and control runs; too many digits and bad uploads get a message."""

from __future__ import annotations

import io
import json

import numpy as np
from conftest import ROOT, assert_clean, plotly_array
from PIL import Image, ImageDraw
from streamlit.testing.v1 import AppTest
from upload_images import bomb_png, encode, photo

PAGE = "pages/13_Image_Captioning.py"


def marks(n: int, size: int = 320) -> Image.Image:
    """n black rings on white, spread over the page: n separate marks once reduced to 32 x 32."""
    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)
    for i in range(n):
        x, y = 20 + (i % 3) * 100, 20 + (i // 3) * 150
        draw.ellipse([x, y, x + 50, y + 80], outline="black", width=14)
    return image


def titles(at: AppTest) -> list[str]:
    return [
        json.loads(e.proto.spec)["layout"].get("title", {}).get("text", "") for e in at.get("plotly_chart")
    ]


def run_page(**state) -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=240)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_held_out_canvas_and_resampling() -> None:
    at = run_page()
    assert_clean(at)
    assert titles(at) == [
        "The canvas and its 8 x 8 patches",
        "Where each captioner looks while writing each word",
        "Held-out canvases: how often each captioner is right, and looks at the right digit",
    ]
    table = at.dataframe[0].value
    assert table["captioner"].tolist() == ["the right caption", "soft attention", "hard attention"]
    at.slider(key="cap_index").set_value(17).run()
    at.button(key="cap_resample").click().run()
    assert at.session_state["cap_sample"] == 1
    assert not at.exception and not at.error and len(titles(at)) == 3


def test_random_canvases_and_too_many_digits() -> None:
    at = run_page(cap_source="New random canvas")
    assert not at.exception and not at.error and len(titles(at)) == 3
    at.selectbox(key="cap_digits").set_value(4).run()
    at.number_input(key="cap_seed").set_value(7).run()
    assert_clean(at)
    at.selectbox(key="cap_digits").set_value(5).run()
    assert not at.exception
    assert len(at.error) == 1 and "more than the captioner was trained for" in at.error[0].value
    assert titles(at) == []


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_uploads() -> None:
    at = run_page(cap_source="Upload")
    assert at.info[0].value.startswith("Choose an image")
    bad = [
        ("notes.png", b"not a picture at all\n" * 20, "not an image"),
        ("blank.png", encode(Image.new("RGB", (64, 64), "white"), "PNG"), "blank"),
        ("dot.png", encode(Image.new("RGB", (1, 1)), "PNG"), "only 1 x 1 pixels"),
        ("bomb.png", bomb_png(20_000), "400,000,000 pixels"),
        ("many.png", png(marks(6)), "more than the captioner was trained for"),
    ]
    for name, data, message in bad:
        at.file_uploader(key="cap_upload").set_value((name, data, "application/octet-stream"))
        at.run()
        assert not at.exception, name
        assert len(at.error) == 1 and message in at.error[0].value, name
        assert titles(at) == [], name
    at.file_uploader(key="cap_upload").set_value(("two.png", png(marks(2)), "image/png"))
    at.run()
    assert_clean(at)
    assert any("32 x 32" in i.value for i in at.info) and len(titles(at)) == 3


def framed(width: int, height: int) -> Image.Image:
    """A frame of ink along every edge and one ring inside: two marks, ink in every border pixel."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, width - 1, height - 1], outline="black", width=height // 12)
    draw.ellipse([width // 3, height // 3, width // 2, 2 * height // 3], outline="black", width=height // 16)
    return image


def test_a_picture_that_is_not_square_fills_the_canvas_and_the_page_says_so() -> None:
    at = run_page(cap_source="Upload")
    at.file_uploader(key="cap_upload").set_value(("wide.png", png(framed(480, 320)), "image/png"))
    at.run()
    assert_clean(at)
    said = [i.value for i in at.info]
    assert any("32 x 32 pixels (the whole picture, its 480 x 320 shape stretched taller" in s for s in said)
    assert any(s.startswith("The captioners know only canvases of 2 to 4 handwritten") for s in said)
    canvas, words = (json.loads(e.proto.spec) for e in at.get("plotly_chart")[:2])
    pixels = plotly_array(canvas["data"][0]["z"])
    assert pixels.shape == (32, 32)
    edges = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    assert edges.min() > 4  # the frame reaches every edge of the canvas: no blank band
    boxes = [shape for shape in words["layout"]["shapes"] if shape["line"]["color"] == "red"]
    assert boxes and all(-0.5 <= b[k] <= 31.5 for b in boxes for k in ("x0", "x1", "y0", "y1"))
    at.file_uploader(key="cap_upload").set_value(("photo.png", png(photo(size=(240, 320))), "image/png"))
    at.run()
    assert not at.exception
    said = [i.value for i in at.info]
    assert any("its 240 x 320 shape stretched wider" in s for s in said)
    assert any(s.startswith("This is a colour picture, and the captioners know only") for s in said)


def test_the_first_canvas_is_read_right_and_the_failures_are_one_slide_away() -> None:
    at = run_page()
    assert_clean(at)
    captions = at.dataframe[0].value["caption"].tolist()
    assert len(captions) == 3 and len(set(captions)) == 1, captions  # the right caption, soft, hard
    at.slider(key="cap_index").set_value(0).run()  # named in the slider's help as a misread canvas
    truth, *written = at.dataframe[0].value["caption"].tolist()
    assert all(w != truth for w in written)
