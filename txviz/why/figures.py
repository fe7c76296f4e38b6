"""Figures of the why-attention page: dependence grids, path length against n, cost lines, threads."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.colors import scale
from txviz.why import cost, paths
from txviz.why.convolution import AttentionConvolution
from txviz.why.cost import Sweep, ThreadTimes

COLORS = {"conv": "#1f77b4", "dilated": "#17becf", "rnn": "#d62728", "gru": "#ff7f0e", "attention": "#2ca02c",
          "attention+proj": "#98df8a"}  # fmt: skip
# never (the RNN cannot read the future), not yet, reads
GRID_SCALE = [
    [0.0, "#f2f2f2"],
    [0.33, "#f2f2f2"],
    [0.34, "#c6dbef"],
    [0.66, "#c6dbef"],
    [0.67, "#08519c"],
    [1, "#08519c"],
]


def dependence_grids(grids: dict[str, np.ndarray], depths: dict[str, int]) -> go.Figure:
    """One grid per stack: output y_i (rows) reads input x_j (columns) after the chosen depth."""
    kinds = list(grids)
    titles = [
        f"{paths.LABELS[k]}<br>after {depths[k]} {paths.DEPTH_NAMES[k]}{'s' * (depths[k] != 1)}"
        for k in kinds
    ]
    figure = make_subplots(rows=1, cols=len(kinds), subplot_titles=titles, horizontal_spacing=0.04)
    for col, kind in enumerate(kinds, start=1):
        grid = grids[kind]
        n = grid.shape[0]
        state = np.where(grid, 2, np.where(paths.reachable(kind, n), 1, 0))
        labels = np.array(["never (the future)", "not yet", "reads"])[state]
        figure.add_trace(
            go.Heatmap(
                z=state,
                x=np.arange(1, n + 1),
                y=np.arange(1, n + 1),
                zmin=0,
                zmax=2,
                colorscale=GRID_SCALE,
                showscale=False,
                customdata=labels,
                xgap=1,
                ygap=1,
                hovertemplate="y_%{y} and x_%{x}: %{customdata}<extra></extra>",
            ),  # fmt: skip
            row=1,
            col=col,
        )
        figure.update_xaxes(title_text="input x_j", row=1, col=col)
        figure.update_yaxes(autorange="reversed", scaleanchor=f"x{col if col > 1 else ''}", row=1, col=col)
    figure.update_yaxes(title_text="output y_i", row=1, col=1)
    figure.update_layout(
        height=430,
        margin=dict(t=120, l=50, r=10, b=40),
        title="Which inputs each output depends on (autograd Jacobian ≠ 0)",
    )
    return figure


def depth_against_n(ns: list[int], measured: dict[str, list[int]], k: int) -> go.Figure:
    """Depth until every output reads every input it can, measured (markers) and the formula (line)."""
    figure = go.Figure()
    for kind, values in measured.items():
        color = COLORS[kind]
        formula = [paths.formula_depth(kind, n, k) for n in ns]
        figure.add_trace(go.Scatter(x=ns, y=formula, mode="lines", line=dict(color=color, dash="dot"),
                                    name=f"{paths.LABELS[kind]}: formula"))  # fmt: skip
        figure.add_trace(go.Scatter(x=ns, y=values, mode="markers", marker=dict(color=color, size=9),
                                    name=f"{paths.LABELS[kind]}: measured"))  # fmt: skip
    figure.update_layout(
        title=f"Maximum path length against n (k = {k})",
        xaxis_title="sequence length n",
        # two lines: on one, the title is longer than the plot is high and runs into the figure's title
        yaxis_title="layers (RNN: steps) until every<br>output reads every input it can",
        height=420,
        margin=dict(t=50, l=60, r=10, b=50),
    )
    return figure


def cost_lines(result: Sweep, metric: str = "flops") -> go.Figure:
    """FLOPs (counted, with the formula dashed) or median seconds per layer, on log-log axes."""
    figure = go.Figure()
    for kind in result.flops:
        color = COLORS[kind]
        values = result.flops[kind] if metric == "flops" else result.seconds[kind]
        figure.add_trace(go.Scatter(x=result.sizes, y=values, mode="lines+markers", line=dict(color=color),
                                    name=cost.LABELS[kind]))  # fmt: skip
        if metric == "flops":
            figure.add_trace(go.Scatter(x=result.sizes, y=result.formula(kind), mode="lines", showlegend=False,
                                        line=dict(color=color, dash="dot", width=1), hoverinfo="skip"))  # fmt: skip
    other = "d" if result.axis == "n" else "n"
    what = "FLOPs counted by FlopCounterMode (dotted: formula)" if metric == "flops" else "median seconds"
    figure.update_layout(
        title=f"{what}<br>as {result.axis} grows ({other} = {result.fixed}, k = {result.k}, "
        f"{result.threads} thread{'s' * (result.threads > 1)})",
        xaxis=dict(type="log", title=result.axis),
        yaxis=dict(type="log", title="FLOPs" if metric == "flops" else "seconds"),
        legend=dict(orientation="h", y=-0.2, x=0),
        height=560,
        margin=dict(t=70, l=60, r=10, b=50),
    )
    return figure


def thread_bars(times: ThreadTimes) -> go.Figure:
    """Seconds per layer on one and two threads: the RNN's sequential steps do not shrink."""
    kinds = list(times.one)
    labels = [cost.LABELS[k] for k in kinds]
    figure = go.Figure(
        [
            go.Bar(x=labels, y=[times.one[k] * 1e3 for k in kinds], name="1 thread"),
            go.Bar(x=labels, y=[times.two[k] * 1e3 for k in kinds], name="2 threads",
                   text=[f"{times.speedup(k):.2f}x" for k in kinds], textposition="outside"),
        ]
    )  # fmt: skip
    figure.update_layout(
        barmode="group",
        title=f"One forward pass at n = {times.n}, d = {times.d}, fastest run: 1 thread vs 2 (label: speed-up)",
        yaxis_title="milliseconds (fastest run)",
        height=400,
        margin=dict(t=50, l=60, r=10, b=50),
    )
    return figure


def forgetting_lines(result) -> go.Figure:
    """|| d y_n / d x_(n-k) || against k, log scale: the GRU's falls away, attention's stays level."""
    figure = go.Figure()
    for name, values in (("RNN (GRU): a product of k step Jacobians", result.rnn),
                         ("self-attention: one step from every input", result.attention)):  # fmt: skip
        color = COLORS["rnn" if name.startswith("RNN") else "attention"]
        figure.add_trace(
            go.Scatter(x=result.distances, y=values, mode="lines+markers", name=name, line={"color": color})
        )
    figure.update_layout(
        title="How much the last output still depends on an input k steps back",
        xaxis={"title": "steps back k (x_(n-k))"},
        yaxis={"title": "‖∂y_n / ∂x_(n-k)‖ (Frobenius)", "type": "log"},
        height=380,
    )
    return figure


def convolution_figure(result: AttentionConvolution, presenting: bool = False) -> go.Figure:
    """The image, the kernel, conv2d's output, the k*k heads' output and where one pixel's heads look."""
    # the last panel is the local mask: the chosen pixel's heads summed, its k x k window
    y, x = result.query
    k = result.kernel.shape[-1]
    panels = [
        ("image", result.image[0], False),
        (f"kernel ({k} x {k})", result.kernel[0, 0], True),
        ("CNN: torch conv2d", result.convolution[0], True),
        (f"attention: {k * k} heads", result.attention[0], True),
        (f"heads of pixel ({y}, {x})", result.query_window, False),
    ]
    figure = make_subplots(rows=1, cols=len(panels), subplot_titles=[title for title, *_ in panels])
    for col, (_, matrix, diverging) in enumerate(panels, start=1):
        limit = float(np.abs(matrix).max()) or 1.0
        figure.add_trace(
            go.Heatmap(
                z=matrix,
                colorscale=scale("diverging" if diverging else "sequential", presenting),
                zmid=0.0 if diverging else None,
                zmin=-limit if diverging else 0.0,
                zmax=limit,
                showscale=False,
                hovertemplate="row %{y}, column %{x}: %{z:.4f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        figure.update_yaxes(autorange="reversed", scaleanchor=f"x{col if col > 1 else ''}", row=1, col=col)
    figure.update_layout(height=300, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return figure


LEVEL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def hierarchy_lines(result) -> go.Figure:
    """Per nested phrase: how much more its tokens attend inside it than the flat-distance baseline,
    layer by layer (mean over heads); dotted, the same span shifted one token across the phrase's edge."""
    figure = go.Figure()
    layers = list(range(result.layer_excess.shape[1]))
    for i, level in enumerate(result.levels):
        color = LEVEL_COLORS[i % len(LEVEL_COLORS)]
        figure.add_trace(
            go.Scatter(
                x=layers, y=result.layer_excess[i], name=level, mode="lines+markers", line={"color": color}
            )
        )
        figure.add_trace(
            go.Scatter(
                x=layers,
                y=result.layer_control[i],
                name=f"{level}, shifted one token",
                mode="lines",
                line={"color": color, "dash": "dot"},
            )
        )
    figure.add_hline(y=0, line={"color": "#888", "width": 1})
    figure.update_layout(
        title="Weight inside the phrase beyond the flat-distance baseline (mean over heads)",
        xaxis={"title": "layer", "tickmode": "array", "tickvals": layers},
        yaxis={"title": "phrase weight − distance baseline"},
        height=420,
        legend={"orientation": "v"},
    )
    return figure
