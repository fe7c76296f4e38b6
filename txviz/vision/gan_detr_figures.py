"""Figures of SAGAN's self-attention over a photograph and of DETR's bipartite matching on a digits canvas."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.axes import margin, ticks
from txviz.figures.colors import scale
from txviz.figures.text import plain, plain_all
from txviz.vision.detr import CLASSES, NO_OBJECT, Scene, to_corners
from txviz.vision.sagan import QueryView

QUERY_COLOUR = "#ff2d2d"
TRUTH_COLOUR = "#2ca02c"
MATCHED_COLOUR = "#ff9f1c"
UNMATCHED_COLOUR = "#9e9e9e"


def _window(fig: go.Figure, row: int, col: int, column: int) -> None:
    """The query's 3 x 3 neighbourhood, all a 3 x 3 convolution would see, outlined in one panel."""
    fig.add_shape(
        type="rect",
        x0=col - 1.5,
        x1=col + 1.5,
        y0=row - 1.5,
        y1=row + 1.5,
        line={"color": QUERY_COLOUR, "width": 2},
        row=1,
        col=column,
    )


def sagan_figure(view: QueryView) -> go.Figure:
    """The downsampled photograph with the query marked, beside beta_{j, .}: where that query looks."""
    side = view.attention.shape[0]
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.08,
        subplot_titles=(
            f"Feature map: the photograph at {side} x {side} (query in red, a 3 x 3 conv's window around it)",
            f"beta for query (row {view.row}, column {view.col}) over all {side * side} positions",
        ),
    )
    fig.add_trace(go.Image(z=view.image, hovertemplate="row %{y}, column %{x}<extra></extra>"), 1, 1)
    fig.add_trace(
        go.Heatmap(
            z=view.attention,
            colorscale=scale("sequential"),
            colorbar={"title": "beta", "x": 1.0},
            hovertemplate="row %{y}, column %{x}: beta %{z:.5f}<extra></extra>",
        ),
        1,
        2,
    )
    for column in (1, 2):
        _window(fig, view.row, view.col, column)
        fig.add_trace(
            go.Scatter(
                x=[view.col],
                y=[view.row],
                mode="markers",
                showlegend=False,
                hoverinfo="skip",
                marker={
                    "symbol": "x",
                    "size": 10,
                    "color": QUERY_COLOUR,
                    "line": {"width": 1, "color": "white"},
                },
            ),
            1,
            column,
        )
    fig.update_xaxes(
        showgrid=False, zeroline=False, title="column", range=[-0.5, side - 0.5], constrain="domain"
    )
    fig.update_yaxes(
        showgrid=False,
        zeroline=False,
        title="row",
        range=[side - 0.5, -0.5],
        scaleanchor="x",
        constrain="domain",
    )
    fig.update_yaxes(scaleanchor="x2", row=1, col=2)
    fig.update_layout(
        title=f"SAGAN self-attention: {1 - view.outside_window:.1%} of the query's weight inside its 3 x 3 window, "
        f"{view.outside_window:.1%} beyond it; largest beta {view.attention.max():.4f} (uniform {view.uniform:.4f})",
        height=460,
        margin=margin(top=90),
    )
    return fig


def _outline(box: np.ndarray, size: int) -> tuple[list[float], list[float]]:
    """A box (cx, cy, w, h) in [0, 1] as a closed path in pixel coordinates."""
    x0, y0, x1, y1 = to_corners(box) * size - 0.5
    return [x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0]


def _box_trace(fig, xs, ys, label: str, line: dict, group: str, name: str, first: bool) -> None:
    """One box's outline on the image (left panel), its label on hover, in the legend once per group."""
    fig.add_trace(
        go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="text", text=plain(label), line=line, legendgroup=group,
                   name=name, showlegend=first),
        1,
        1,
    )  # fmt: skip


def query_label(found: Scene, query: int) -> str:
    """A query as the axis names it: its number and the class it predicts, with that probability."""
    predicted = found.predicted(query)
    return f"q{query}: {CLASSES[predicted]} {found.probs[query, predicted]:.2f}"


def object_label(found: Scene, index: int) -> str:
    """A ground-truth object as the axis names it: its number and its digit."""
    return f"object {index}: {CLASSES[found.labels[index]]}"


def detr_figure(found: Scene) -> go.Figure:
    """Ground truth and predicted boxes on the canvas, matched pairs linked; the cost matrix and the assignment."""
    size = found.canvas.shape[0]
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.22,
        subplot_titles=(
            'Canvas: ground truth (green), matched queries (orange), "no object" (grey)',
            "Matching cost: -p(class) + 5 L1 - 2 GIoU (squares: the assignment)",
        ),
    )
    fig.add_trace(
        go.Heatmap(
            z=found.canvas,
            colorscale="gray",
            showscale=False,
            zmin=0,
            zmax=16,
            hovertemplate="pixel row %{y}, column %{x}<extra></extra>",
        ),
        1,
        1,
    )
    for index, box in enumerate(found.targets):
        xs, ys = _outline(box, size)
        line = {"color": TRUTH_COLOUR, "width": 3}
        _box_trace(fig, xs, ys, object_label(found, index), line, "truth", "ground truth", index == 0)
    for query, box in enumerate(found.boxes):
        matched = found.assigned[query] >= 0
        xs, ys = _outline(box, size)
        line = {
            "color": MATCHED_COLOUR if matched else UNMATCHED_COLOUR,
            "width": 2,
            "dash": "dash" if matched else "dot",
        }
        first = bool(query == np.flatnonzero((found.assigned >= 0) == matched)[0])
        group, name = ("matched", "matched query") if matched else ("unmatched", "query: no object")
        _box_trace(fig, xs, ys, query_label(found, query), line, group, name, first)
        centre = box[:2] * size - 0.5
        fig.add_trace(
            go.Scatter(  # the name at the box's top left corner, clear of the link from its centre
                x=[xs[0]],
                y=[ys[0]],
                mode="text",
                text=[f"q{query}"],
                textposition="bottom right",
                showlegend=False,
                hoverinfo="skip",
                textfont={"color": MATCHED_COLOUR if matched else UNMATCHED_COLOUR, "size": 13},
            ),
            1,
            1,
        )
        if matched:
            target = found.targets[found.assigned[query]][:2] * size - 0.5
            fig.add_trace(
                go.Scatter(
                    x=[centre[0], target[0]],
                    y=[centre[1], target[1]],
                    mode="lines+markers",
                    line={"color": MATCHED_COLOUR, "width": 2},
                    marker={"size": 5},
                    legendgroup="link",
                    name="matched pair",
                    showlegend=bool(query == np.flatnonzero(found.assigned >= 0)[0]),
                    hoverinfo="skip",
                ),
                1,
                1,
            )
    fig.update_xaxes(
        showgrid=False,
        zeroline=False,
        range=[-0.5, size - 0.5],
        title="pixel column",
        constrain="domain",
        row=1,
        col=1,
    )
    fig.update_yaxes(
        showgrid=False,
        zeroline=False,
        range=[size - 0.5, -0.5],
        title="pixel row",
        scaleanchor="x",
        constrain="domain",
        row=1,
        col=1,
    )
    queries = [query_label(found, q) for q in range(len(found.boxes))]
    objects = [object_label(found, t) for t in range(len(found.labels))]
    cost = found.costs.total
    fig.add_trace(
        go.Heatmap(
            z=cost,
            colorscale=scale("sequential"),
            reversescale=True,
            colorbar={"title": "cost", "x": 1.02},
            text=np.round(cost, 2),
            texttemplate="%{text}",
            customdata=np.array(plain_all(objects))[None].repeat(len(queries), 0),
            hovertemplate="query %{y}, %{customdata}: cost %{z:.3f}<extra></extra>",
        ),
        1,
        2,
    )
    rows = np.flatnonzero(found.assigned >= 0)
    fig.add_trace(
        go.Scatter(
            x=found.assigned[rows],
            y=rows,
            mode="markers",
            name="assignment",
            hoverinfo="skip",
            marker={"symbol": "square-open", "size": 34, "color": QUERY_COLOUR, "line": {"width": 3}},
        ),
        1,
        2,
    )
    fig.update_xaxes(ticks(objects), title="ground-truth object", row=1, col=2)
    fig.update_yaxes(ticks(queries), title="object query", autorange="reversed", row=1, col=2)
    fig.update_layout(
        title=f"DETR's bipartite matching: {len(found.boxes)} queries, {len(found.labels)} objects; "
        f"least total cost {found.total_cost():.2f}; {int((found.assigned < 0).sum())} queries get "
        f'"{CLASSES[NO_OBJECT]}"',
        height=480,
        margin=margin(top=90),
        legend={"orientation": "h", "y": -0.15},
    )
    return fig
