"""The Image GPT page: every view and control runs, live drawing finishes, bad uploads get a message."""

from __future__ import annotations

import io
import json

import pytest
from conftest import ROOT, assert_clean
from PIL import Image, ImageDraw
from streamlit import config
from streamlit.testing.v1 import AppTest
from upload_images import bomb_png, encode

from txviz.imagegpt import data as digits

PAGE = "pages/12_Image_GPT.py"


def drawing_of_a_one(size: int = 64) -> Image.Image:
    """A white page with one black stroke: a '1' drawn with a pen."""
    image = Image.new("RGB", (size, size), "white")
    ImageDraw.Draw(image).line([(size // 2, 6), (size // 2, size - 6)], fill="black", width=size // 8)
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


def test_draw_view_and_its_controls() -> None:
    at = run_page()
    assert_clean(at)
    assert titles(at)[0].startswith("Pixel 36 (row 4, column 4)")
    assert any("bits per pixel" in c.value for c in at.caption)
    at.selectbox(key="igpt_digit").set_value("any digit").run()
    at.slider(key="draw_temperature").set_value(0.0).run()
    at.slider(key="draw_top_k").set_value(3).run()
    at.slider(key="igpt_pixel").set_value(9).run()
    assert titles(at)[0].startswith("Pixel 9 (row 1, column 1)")
    assert titles(at)[2] == "Where each head looks while drawing pixel 9 (red)"
    at.button(key="igpt_live").click().run()
    assert_clean(at)
    assert len(titles(at)) == 3  # the live figures were replaced by the replay


def test_completion_and_numbers_views() -> None:
    at = run_page(view="Complete a held-out digit")
    assert_clean(at)
    _, _, _, labels = digits.split()
    # The title names the digit drawn (the original shown), not the example's index.
    assert titles(at) == [f"Completing a held-out {labels[0]} (example 0): three samples"]
    at.slider(key="igpt_heldout").set_value(41).run()
    at.toggle(key="igpt_told").set_value(True).run()
    at.number_input(key="complete_seed").set_value(5).run()
    assert_clean(at)
    assert titles(at) == [f"Completing a held-out {labels[41]} (example 41): three samples"]
    assert at.slider(key="igpt_heldout").label == "Held-out example"
    at.session_state["view"] = "How good is it?"
    at.run()
    assert_clean(at)
    assert titles(at)[0].startswith("Held-out bits per pixel")
    assert any("digits-vit" in c.value for c in at.caption)


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key="igpt_upload").set_value((name, data, "application/octet-stream"))
    return at.run()


def test_uploads() -> None:
    at = run_page(view="Your own image")
    assert at.info[0].value.startswith("Choose an image")
    bad = [
        ("notes.png", b"not a picture at all\n" * 20, "not an image"),
        ("blank.png", encode(Image.new("RGB", (64, 64), "white"), "PNG"), "blank"),
        ("dot.png", encode(Image.new("RGB", (1, 1)), "PNG"), "only 1 x 1 pixels"),
        ("bomb.png", bomb_png(20_000), "400,000,000 pixels"),
    ]
    for name, data, message in bad:
        upload(at, name, data)
        assert not at.exception, name
        assert len(at.error) == 1 and message in at.error[0].value, name
        assert titles(at) == [], name
    buffer = io.BytesIO()
    drawing_of_a_one(600).save(buffer, format="PNG")
    upload(at, "one.png", buffer.getvalue())
    assert_clean(at)
    assert any("inverted" in i.value and "8 x 8" in i.value for i in at.info)
    assert titles(at) == ["Your image as the model sees it"]


@pytest.fixture
def magic_on():
    """Streamlit's magic as its default has it: the page itself must write nothing stray, not only our config."""
    before = config.get_option("runner.magicEnabled")
    config.set_option("runner.magicEnabled", True)
    yield
    config.set_option("runner.magicEnabled", before)


def test_live_drawing_writes_nothing_of_its_own(magic_on) -> None:
    """Clearing the live slots leaves no stray output (magic once wrote their help text onto the page)."""
    at = run_page()
    at.button(key="igpt_live").click().run()
    assert_clean(at)
    assert at.get("help") == []
    assert not any("DeltaGenerator" in str(e.value) for e in [*at.markdown, *at.text, *at.caption])
