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
