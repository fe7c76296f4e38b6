"""Colour scales by kind: presentation mode turns sequential scales to cividis and leaves diverging
and categorical ones alone; builders choose, nothing rewrites a figure afterwards."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from txviz.figures import attention, colors
from txviz.masks import figures as mask_figures
from txviz.positional import figures as positional_figures

TXVIZ = Path(__file__).resolve().parents[2] / "txviz"
VIRIDIS, CIVIDIS, RDBU = colors.SCALES["viridis"], colors.SCALES["cividis"], colors.SCALES["rdbu"]


def colours_of(colorscale) -> list[str]:
    return [str(colour).lower() for _, colour in colorscale]


def test_scale_by_kind_and_mode():
    assert colours_of(colors.scale("sequential")) == VIRIDIS
    assert colours_of(colors.scale("sequential", presenting=True)) == CIVIDIS
    for kind in ("diverging", "categorical"):
        assert colors.scale(kind) == colors.scale(kind, presenting=True)
    assert colours_of(colors.scale("diverging")) == RDBU
    assert RDBU[len(RDBU) // 2] == "#f7f7f7"  # zero sits on the near-white middle
    steps = colors.scale("categorical", categories=3)  # integer values 0, 1, 2: one flat colour each
    assert [position for position, _ in steps] == [0, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 1]
    assert colours_of(steps) == [c for c in colors.PALETTE[:3] for _ in range(2)]
    with pytest.raises(ValueError, match="sequential"):
        colors.scale("rainbow")


def test_builders_take_the_mode_for_sequential_scales_only():
    w = np.full((3, 3), 1 / 3)
    shown = attention.attention_heatmap(w, ("a", "b", "c"), ("a", "b", "c"), presenting=True)
    assert colours_of(shown.data[0].colorscale) == CIVIDIS
    plain = attention.attention_heatmap(w, ("a", "b", "c"), ("a", "b", "c"))
    assert colours_of(plain.data[0].colorscale) == VIRIDIS
    from txviz.figures import grids

    def schemes(chart) -> str:
        return [layer["encoding"]["color"]["scale"]["scheme"] for layer in chart.to_dict()["layer"][:1]]

    assert schemes(grids.head_grid(np.eye(2), "S", "score", None, True, (0, 1))) == ["cividis"]
    assert schemes(grids.head_grid(np.eye(2), "S", "score", None, False, (0, 1))) == ["viridis"]
    mosaic = attention.heads_mosaic(np.ones((1, 1, 2, 2)), presenting=True)  # an image: colours in its pixels
    assert mosaic.data[0].source != attention.heads_mosaic(np.ones((1, 1, 2, 2))).data[0].source


def presentation_page():
    import numpy as np
    import streamlit as st

    from txviz.app import ui
    from txviz.masks import figures as mask_figures
    from txviz.positional import figures as positional_figures

    st.session_state["presentation"] = True
    ui.show_figure(positional_figures.encoding_heatmap(np.eye(4) - 0.5, "P"), key="diverging")
    ui.show_figure(positional_figures.similarity_heatmap(np.eye(4), "S", ui.presenting()), key="sequential")
    regions = np.arange(4).reshape(2, 2)
    ui.show_figure(mask_figures.swin_figure(regions, regions, 1), key="categorical")


def test_presentation_mode_keeps_diverging_and_categorical_scales_in_the_page():
    at = AppTest.from_function(presentation_page, default_timeout=60).run()
    assert not at.exception
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    diverging, sequential, categorical = (spec["data"][0]["colorscale"] for spec in specs)
    assert colours_of(diverging) == RDBU  # before the fix: rewritten to cividis
    assert colours_of(sequential) == CIVIDIS
    assert colours_of(categorical) == colours_of(colors.scale("categorical", categories=4))
    assert specs[0]["layout"]["font"]["size"] == 20  # presentation mode still enlarges the text
    # the same builders outside the page agree: the scale was the builder's choice
    assert colours_of(positional_figures.encoding_heatmap(np.eye(2), "P").data[0].colorscale) == RDBU
    swin = mask_figures.swin_figure(np.zeros((2, 2), int), np.zeros((2, 2), int), 1)
    assert swin.data[2].colorscale == tuple(tuple(s) for s in mask_figures.MASK_SCALE)


def show_shared_figure(figure):
    import streamlit as st

    from txviz.app import ui

    st.session_state["presentation"] = True
    ui.show_figure(figure, key="shared")


def test_presentation_mode_leaves_the_given_figure_unchanged():
    """Figures are often cached for every session: the page shows a copy with the larger font."""
    figure = positional_figures.similarity_heatmap(np.eye(4), "S")
    before = figure.to_json()
    at = AppTest.from_function(show_shared_figure, args=(figure,), default_timeout=60).run()
    assert not at.exception
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["font"]["size"] == 20
    assert figure.to_json() == before and figure.layout.font.size is None


# Fixed scales that are right where they are, by (file, constant or builder): why each stays.
FIXED_SCALES = {
    ("captioning/figures.py", "GREYS"): "the canvas itself: pixel intensities as grey levels",
    ("imagegpt/figures.py", "GREYS"): "the image itself: grey levels as grey",
    ("captioning/figures.py", "ATTENTION"): "an overlay on the image, transparent to orange",
    ("vision/figures.py", "_index_heatmap"): "an invisible layer that only carries the hover text",
    ("masks/figures.py", "MASK_SCALE"): "two categories in their meaning's colours (allowed, forbidden)",
    ("why/figures.py", "GRID_SCALE"): "three states from light to dark: never, not yet, reads",
    ("seq2seq/figures.py", "forcing_figure"): "pale right / neutral / wrong cells under black text",
}


def _chosen_by_kind(value: ast.expr, constants: dict[str, ast.expr]) -> bool:
    """colors.scale(kind, presenting), directly, through a module constant or in either branch of an if."""
    if isinstance(value, ast.Name) and value.id in constants:
        return _chosen_by_kind(constants[value.id], constants)
    if isinstance(value, ast.IfExp):
        return _chosen_by_kind(value.body, constants) and _chosen_by_kind(value.orelse, constants)
    func = getattr(value, "func", None)
    return isinstance(value, ast.Call) and getattr(func, "id", getattr(func, "attr", None)) == "scale"


def hard_coded_scales() -> set[tuple[str, str]]:
    """(file, constant or builder) of every colorscale in a figure module not chosen by colors.scale."""
    found = set()
    for path in sorted({*TXVIZ.glob("**/figures.py"), *TXVIZ.glob("figures/*.py")}):
        tree = ast.parse(path.read_text())
        constants = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                     if isinstance(t, ast.Name)}  # fmt: skip
        for builder in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            for node in ast.walk(builder):
                values = [k.value for k in getattr(node, "keywords", []) if k.arg == "colorscale"]
                if isinstance(node, ast.Dict):
                    values += [v for k, v in zip(node.keys, node.values, strict=True)
                               if isinstance(k, ast.Constant) and k.value == "colorscale"]  # fmt: skip
                for value in values:
                    if not _chosen_by_kind(value, constants):
                        where = value.id if isinstance(value, ast.Name) else builder.name
                        found.add((path.relative_to(TXVIZ).as_posix(), where))
    return found


def test_figure_builders_choose_scales_by_kind():
    """A named scale ("Viridis", "RdBu") or a scale name taken from the page fails here."""
    unexplained = hard_coded_scales() - set(FIXED_SCALES)
    assert not unexplained, f"use colors.scale(kind, presenting) in: {sorted(unexplained)}"
    assert set(FIXED_SCALES) <= hard_coded_scales()  # the list names only scales that still exist
