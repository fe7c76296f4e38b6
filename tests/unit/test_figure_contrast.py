"""Text on figures is readable: WCAG 2 contrast of at least 4.5:1 against what it sits on, and a font of
12 px or more. Colours are read from the figure objects, not from pixels. A figure that leaves a text
colour to the theme fails: Streamlit's chart theme draws such text faint."""

from __future__ import annotations

import re

import numpy as np
import pytest

from txviz.figures.axes import TICK_FONT
from txviz.figures.colors import MIN_TEXT_CONTRAST, contrast_ratio, luminance, text_on


def test_contrast_ratio_follows_wcag():
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#ffffff", "#ffffff") == pytest.approx(1.0)
    assert contrast_ratio("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # the lightest AA grey
    assert luminance((255, 255, 255)) == pytest.approx(1.0)
    assert text_on("#fde725") == "#000000" and text_on("#440154") == "#ffffff"


def _readable(note: dict, background: str = "#ffffff") -> None:
    font = note.get("font", {})
    assert "color" in font, f"{note['text']!r} leaves its colour to the theme"
    assert contrast_ratio(font["color"], note.get("bgcolor", background)) >= MIN_TEXT_CONTRAST, note["text"]
    assert font.get("size", 0) >= TICK_FONT, note["text"]
    for size in re.findall(r"font-size:\s*(\d+)px", note["text"]):
        assert int(size) >= TICK_FONT, note["text"]


def test_course_map_text_is_dark_and_large_enough():
    from txviz.coursemap.figures import course_map_figure

    layout = course_map_figure("positional").to_dict()["layout"]
    notes = [n for n in layout["annotations"] if n.get("text")]
    assert notes
    for note in notes:
        _readable(note, layout.get("plot_bgcolor", "#ffffff"))


def test_self_attention_routing_names_are_readable():
    """The Sankey's names sit on white, not on its grey bands (plotly's node labels would)."""
    from txviz.selfattention import figures
    from txviz.selfattention.toy import HeadResult

    tokens = ["The", "animal", "tired"]
    result = HeadResult(*[None] * 5, np.full((3, 3), 1 / 3), None, 1.0)
    layout_and_data = figures.routing_figure(result, tokens).to_dict()
    sankey = layout_and_data["data"][0]
    assert not any(sankey["node"]["label"]), "node labels are drawn over the bands"
    notes = layout_and_data["layout"]["annotations"]
    shown = {n["text"] for n in notes}
    assert shown == {f"v from {t}" for t in tokens} | {f"output {t}" for t in tokens}
    for note in notes:
        _readable(note, layout_and_data["layout"].get("paper_bgcolor", "#ffffff"))


def test_vision_patch_numbers_contrast_with_their_own_patch():
    """Light patches get dark numbers and dark patches light ones (one yellow was unreadable on light)."""
    from txviz.vision import figures
    from txviz.vision.patches import PatchGrid

    grid = PatchGrid(8, 12, 4, 4)  # 2 x 3 patches
    image = np.zeros((8, 12, 3), dtype=np.uint8)
    image[:, :4] = 255  # white column
    image[:, 4:8] = (250, 240, 120)  # pale yellow column
    image[:4, 8:] = (128, 128, 128)  # mid grey, then black
    figure = figures.patch_grid_figure(image, grid).to_dict()
    numbers = next(t for t in figure["data"] if t.get("mode") == "text")
    colours = numbers["textfont"]["color"]
    assert isinstance(colours, (list, tuple)) and len(colours) == grid.n_patches
    tiles = figures.patch_tiles(image, grid).reshape(grid.n_patches, -1, 3).mean(1)
    for patch, (colour, mean) in enumerate(zip(colours, tiles, strict=True)):
        ratio = contrast_ratio(colour, tuple(int(round(c)) for c in mean))
        assert ratio >= MIN_TEXT_CONTRAST, (patch, colour, mean)


def test_vision_probability_bars_each_show_their_percentage_readably():
    """Short bars put their label beside the bar (plotly dropped or shrank it inside); every label is
    dark on white or white on the bar's colour."""
    from txviz.vision import figures

    probabilities = np.array([0.02, 0.9, 0.05, 0.03])
    layout_and_data = figures.probability_bars_figure(list("abcd"), probabilities).to_dict()
    bar = layout_and_data["data"][0]
    assert list(bar["text"]) == ["90.0%", "5.0%", "3.0%", "2.0%"]
    positions = bar["textposition"]
    assert isinstance(positions, (list, tuple)), "one position for bars of every length"
    assert positions[0] == "inside" and set(positions[1:]) == {"outside"}
    assert contrast_ratio(bar["insidetextfont"]["color"], bar["marker"]["color"]) >= MIN_TEXT_CONTRAST
    assert contrast_ratio(bar["outsidetextfont"]["color"], "#ffffff") >= MIN_TEXT_CONTRAST
    assert bar["textfont"]["size"] >= TICK_FONT
    assert bar.get("cliponaxis") is False and bar.get("constraintext") == "none"
    assert layout_and_data["layout"].get("uniformtext", {}).get("mode") in (None, False, "show")
