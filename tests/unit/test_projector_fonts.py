"""Projector mode scales every figure font by one factor, plotly and altair alike, on a copy."""

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.app import projector
from txviz.figures import attention, grids

F = projector.FONT_SCALE


def test_a_heatmaps_ticks_titles_and_colorbar_grow_by_the_factor():
    figure = attention.attention_heatmap(np.eye(3), ("a", "b", "c"), ("a", "b", "c"), "Title")
    before = figure.to_json()
    layout = projector.scaled(figure).layout
    sizes = projector.PLOTLY_SIZES
    assert layout.xaxis.tickfont.size == layout.yaxis.tickfont.size == round(sizes["tick"] * F, 1) >= 18
    assert layout.title.font.size == round(sizes["title"] * F, 1)
    assert layout.xaxis.title.font.size == round(sizes["axis_title"] * F, 1)
    assert layout.coloraxis.colorbar.tickfont.size == round(sizes["tick"] * F, 1)
    assert figure.to_json() == before  # the figure given (maybe cached for every session) is unchanged


def test_sizes_a_figure_sets_itself_grow_by_the_same_factor():
    figure = make_subplots(1, 2, subplot_titles=("left", "right"))
    figure.add_trace(go.Scatter(x=[1], y=[1], text=["t"], mode="text", textfont=dict(size=[10])), 1, 1)
    figure.add_trace(go.Bar(x=[1], y=[1]), 1, 2)
    figure.update_annotations(font_size=11).update_layout(xaxis2=dict(tickfont=dict(size=9)))
    shown = projector.scaled(figure)
    assert [a.font.size for a in shown.layout.annotations] == [round(11 * F, 1)] * 2
    assert shown.layout.xaxis2.tickfont.size == round(9 * F, 1)
    assert shown.layout.xaxis.tickfont.size == round(12 * F, 1)  # every axis, not only the first
    assert list(shown.data[0].textfont.size) == [round(10 * F, 1)]


def test_an_altair_grid_gets_scaled_theme_sizes_and_its_own_sizes_scaled():
    grid = grids.head_grid(np.ones((2, 3)), "Entropy per head")
    spec = projector.scaled(grid)
    assert spec["config"]["axis"]["labelFontSize"] == round(12 * F, 1) >= 18
    assert spec["config"]["title"]["fontSize"] == round(16 * F, 1)
    labelled = alt.Chart(pd.DataFrame({"x": [1]})).mark_text(fontSize=10).encode(x="x:Q")
    assert projector.scaled(labelled)["mark"]["fontSize"] == round(10 * F, 1)
    assert "config" not in grid.to_dict() or "title" not in grid.to_dict()["config"]  # the chart is untouched


def test_every_chart_in_the_app_is_drawn_through_the_projector():
    """A chart drawn with st.plotly_chart or st.altair_chart elsewhere would keep its small fonts."""
    from conftest import ROOT, drawing_files

    calls = ("plotly_chart(", "altair_chart(", "vega_lite_chart(", "pyplot(")
    files = drawing_files()
    assert any("views" in path.as_posix() for path in files)
    drawing = [
        f"{path.relative_to(ROOT)}: {call}"
        for path in files
        if path.name != "projector.py"
        for call in calls
        if call in path.read_text()
    ]
    assert drawing == [], "draw figures with ui.show_figure or projector.draw"
