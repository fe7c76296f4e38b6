"""Figures of the transformer block page: the data flow, block steps, residual norms, norms, logit lens."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from txviz.block.dataflow import Stage, StageValues
from txviz.block.lens import Lens
from txviz.block.norms import Dependence
from txviz.block.ops import Step
from txviz.figures.attention import pool
from txviz.figures.axes import margin, ticks
from txviz.figures.colors import PALETTE, scale
from txviz.figures.counts import rank_axis
from txviz.figures.text import in_template, plain, plain_all

DIVERGING = scale("diverging")  # activations: red negative, near-white zero, blue positive (any mode)
MAX_FEATURES = 384  # heatmap columns; wider matrices are shown in full but may be pooled by the browser


def data_flow(boxes: tuple[Stage, ...], selected: str, title: str = "") -> go.Figure:
    """A left-to-right chain of boxes; the selected one is filled."""
    figure = go.Figure()
    width, gap = 1.0, 0.35
    for i, box in enumerate(boxes):
        x0 = i * (width + gap)
        chosen = box.key == selected
        figure.add_shape(
            type="rect",
            x0=x0,
            x1=x0 + width,
            y0=0,
            y1=1,
            line=dict(color="#1f4e79", width=3 if chosen else 1),
            fillcolor="#1f4e79" if chosen else "#e8f0f8",
        )
        figure.add_annotation(
            x=x0 + width / 2,
            y=0.5,
            text=plain(box.label).replace("\n", "<br>"),  # the line breaks are ours
            showarrow=False,
            font=dict(color="white" if chosen else "#1f2d3d", size=13),
        )
        if i:
            figure.add_annotation(
                x=x0 - 0.02,
                y=0.5,
                ax=x0 - gap + 0.02,
                ay=0.5,
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                showarrow=True,
                arrowhead=2,
                arrowwidth=2,
                arrowcolor="#555",
                text="",
            )
    total = len(boxes) * (width + gap) - gap
    figure.update_layout(
        title=plain(title),
        height=190,
        margin=margin(top=40),
        plot_bgcolor="white",
        xaxis=dict(visible=False, range=[-0.05, total + 0.05]),
        yaxis=dict(visible=False, range=[-0.1, 1.1]),
    )
    return figure


def matrix(values: np.ndarray, rows, title: str, axes=("token", "feature"), cols=None) -> go.Figure:
    """A 2-D array as a heatmap, diverging around zero; rows labelled (tokens), columns numbered."""
    values = np.asarray(values, dtype=np.float32)
    if values.ndim == 1:
        values = values[:, None]
    limit = float(np.abs(values[np.isfinite(values)]).max()) if np.isfinite(values).any() else 1.0
    figure = go.Figure(
        go.Heatmap(
            z=values,
            colorscale=DIVERGING,
            zmid=0,
            zmin=-limit,
            zmax=limit,
            hovertemplate=f"{in_template(axes[0])} %{{y}}, {in_template(axes[1])} %{{x}}<br>"
            "%{z:.4g}<extra></extra>",
        )
    )
    yaxis = dict(title=plain(axes[0]), autorange="reversed")
    if rows is not None and len(rows) == values.shape[0]:
        yaxis |= ticks(rows)
    xaxis = dict(title=plain(axes[1]))
    if cols is not None and len(cols) == values.shape[1]:
        xaxis |= ticks(cols)
    figure.update_layout(
        title=plain(title if "shape" in title else f"{title}  {values.shape[0]} × {values.shape[1]}"),
        height=min(700, max(260, 18 * values.shape[0] + 140)),
        yaxis=yaxis,
        xaxis=xaxis,
        margin=margin(),
    )
    return figure


def stage_figure(values: StageValues, tokens: tuple[str, ...]) -> go.Figure:
    """The numbers of one data-flow stage."""
    if values.ids:
        figure = go.Figure(
            go.Table(
                header=dict(values=["position", "token", "id"]),
                cells=dict(values=[list(range(len(values.ids))), plain_all(tokens), list(values.ids)]),
            )
        )
        figure.update_layout(
            title=plain(values.title), height=min(600, 60 + 28 * len(values.ids)), margin=margin(top=40)
        )
        return figure
    if values.top_probs is not None:
        figure = go.Figure(
            go.Bar(
                x=list(range(len(tokens))),
                y=values.top_probs,
                text=plain_all(values.top_tokens),
                textposition="outside",
                hovertemplate="after %{customdata}: %{text} (p = %{y:.3f})<extra></extra>",
                customdata=plain_all(tokens),
            )
        )
        figure.update_layout(
            title=plain(values.title),
            yaxis=dict(title="probability", range=[0, 1.1]),
            xaxis=dict(title="position (input token)") | ticks(tokens),
            height=420,
        )
        return figure
    axes = ("position", "frequency") if "Position" in values.title and values.matrix.shape[1] < 64 else None
    return matrix(values.matrix, tokens, values.title, axes or ("token", "feature"))


def head_of(step: Step, head: int, n_heads: int) -> int:
    """The row of a per-head array for query head ``head``: under GQA, K and V have fewer heads."""
    return head * len(step.value) // n_heads


def step_figure(
    step: Step,
    tokens: tuple[str, ...],
    head: int = 0,
    memory_tokens=None,
    n_heads: int = 0,
    presenting: bool = False,
) -> go.Figure:
    """One intermediate of the block: per-head arrays show the chosen head (its KV head under GQA)."""
    value, axes, title = step.value, step.axes, f"{step.name}: shape {step.shape}"
    if axes[0] == "head":
        row = head_of(step, head, n_heads or len(value))
        shared = (
            f" (KV head {row}, shared by {n_heads // len(value)} query heads)"
            if row != head or len(value) < n_heads
            else ""
        )
        value, axes, title = value[row], axes[1:], f"{step.name}, head {head}{shared}: shape {step.shape}"
    if axes == ("query", "key"):
        keys = memory_tokens if memory_tokens is not None and value.shape[1] != len(tokens) else tokens
        figure = go.Figure(
            go.Heatmap(
                z=value,
                colorscale=scale("sequential", presenting),
                zmin=0,
                zmax=float(value.max()),
                hovertemplate="query %{y}, key %{x}<br>weight %{z:.4f}<extra></extra>",
            )
        )
        figure.update_layout(
            title=plain(title),
            height=min(700, max(300, 18 * len(value) + 160)),
            yaxis=dict(title="query", autorange="reversed") | ticks(tokens[: value.shape[0]]),
            xaxis=dict(title="key", side="top") | ticks(keys[: value.shape[1]]),
        )
        return figure
    rows = None
    if axes[0] == "token":
        rows = tokens if value.shape[0] == len(tokens) else memory_tokens
    return matrix(value, rows, title, axes if len(axes) == 2 else (axes[0], ""))


def residual_heatmap(
    values: np.ndarray, tokens: tuple[str, ...], title: str, stream: bool = False, presenting: bool = False
) -> go.Figure:
    """Layer x token norms; the stream's rows are the embeddings, then the output of each block."""
    rows = ["embeddings"] * stream + [f"{'after ' * stream}block {i}" for i in range(len(values) - stream)]
    figure = go.Figure(
        go.Heatmap(
            z=values,
            colorscale=scale("sequential", presenting),
            y=rows,
            hovertemplate="%{y}, token %{x}<br>norm %{z:.3g}<extra></extra>",
            colorbar=dict(title="L2 norm"),
        )
    )
    figure.update_layout(
        title=plain(title),
        height=max(300, min(700, 16 * len(values) + 150)),
        xaxis=dict(side="top", tickangle=-60) | ticks(tokens),
        yaxis=dict(title="", autorange="reversed", type="category"),
        margin=margin(top=110),
    )
    return figure


def residual_bars(per_layer: dict[str, np.ndarray]) -> go.Figure:
    """Mean norm per block of what each sub-block added, and of the stream after it."""
    figure = go.Figure(
        [go.Bar(name=plain(name), x=list(range(len(v))), y=v) for name, v in per_layer.items()]
    )
    figure.update_layout(
        title="Per layer: mean L2 norm over tokens",
        barmode="group",
        height=380,
        xaxis=dict(title="layer"),
        yaxis=dict(title="mean L2 norm", type="log"),
    )
    return figure


def lens_grid(lens: Lens, presenting: bool = False) -> go.Figure:
    """Layer x position: the top token as text, its probability as colour."""
    n = len(lens.top_ids)
    text = [[plain(t) for t in row] for row in lens.top_tokens]
    figure = go.Figure(
        go.Heatmap(
            z=lens.top_probs,
            text=text,
            texttemplate="%{text}",
            textfont=dict(size=10),
            zmin=0,
            zmax=1,
            colorscale=scale("sequential", presenting),
            colorbar=dict(title="p(top)"),
            y=[f"{i}" for i in range(n)],
            hovertemplate="after layer %{y}, position %{x}<br>top: %{text} (p = %{z:.3f})<extra></extra>",
        )
    )
    figure.update_layout(
        title="Logit lens: the top next token if the model stopped after each layer (row 0: embeddings)",
        height=max(400, 20 * n + 160),
        yaxis=dict(title="after layer", autorange="reversed", type="category"),
        xaxis=dict(side="top", tickangle=-60) | ticks(lens.tokens),
        margin=margin(top=120),
    )
    return figure


def lens_position(lens: Lens, position: int, final_token: str) -> go.Figure:
    """Rank and probability of the model's final prediction at one position, across layers."""
    layers = list(range(len(lens.final_rank)))
    figure = go.Figure(
        [
            go.Scatter(x=layers, y=lens.final_prob[:, position], name="probability", mode="lines+markers"),
            go.Scatter(
                x=layers,
                y=lens.final_rank[:, position] + 1,
                name="rank (1 = top)",
                mode="lines+markers",
                yaxis="y2",
            ),
        ]
    )
    figure.update_layout(
        title=f"The final prediction '{plain(final_token)}' after '{plain(lens.tokens[position])}', by layer",
        xaxis=dict(title="after layer (0 = embeddings)"),
        yaxis=dict(title="probability", range=[0, 1]),
        yaxis2=dict(
            overlaying="y", side="right", **rank_axis(int(lens.final_rank[:, position].max()) + 1, "rank")
        ),
        height=380,
        legend=dict(orientation="h", y=-0.2),
    )
    return figure


def norm_statistics(ln_mean, ln_std, bn_mean, bn_std, token_labels) -> go.Figure:
    """LayerNorm's statistics are per token, BatchNorm's per feature."""
    from plotly.subplots import make_subplots

    figure = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            "LayerNorm: a mean and std per token",
            "BatchNorm: a mean and std per feature",
        ),
    )
    x = list(range(len(ln_mean)))
    figure.add_trace(go.Bar(x=x, y=ln_mean, name="LN mean", hovertext=plain_all(token_labels)), 1, 1)
    figure.add_trace(go.Bar(x=x, y=ln_std, name="LN std", hovertext=plain_all(token_labels)), 1, 1)
    f = list(range(len(bn_mean)))
    figure.add_trace(go.Scatter(x=f, y=bn_mean, name="BN mean", mode="lines"), 1, 2)
    figure.add_trace(go.Scatter(x=f, y=bn_std, name="BN std", mode="lines"), 1, 2)
    figure.update_xaxes(title_text="token of the batch (sentence by sentence)", row=1, col=1)
    figure.update_xaxes(title_text="feature", row=1, col=2)
    figure.update_layout(height=400, barmode="group", legend=dict(orientation="h", y=-0.25))
    return figure


def dependence_bars(dep: Dependence, tokens: tuple[str, ...], what: str) -> go.Figure:
    """Max change of each token's normalised output when the rest of the batch changed."""
    x = list(range(len(tokens)))
    figure = go.Figure(
        [
            go.Bar(x=x, y=dep.layer_norm, name="LayerNorm"),
            go.Bar(x=x, y=dep.batch_norm, name="BatchNorm"),
        ]
    )
    figure.update_layout(
        title=f"Sentence 1's outputs after {plain(what)}: max |change| per token",
        barmode="group",
        height=380,
        xaxis=dict(title="token of sentence 1") | ticks(tokens),
        yaxis=dict(title="max |change|"),
    )
    return figure


def steps_overview(steps: tuple[Step, ...], head: int = 0, columns: int = 5) -> go.Figure:
    """A small heatmap of every intermediate in code order, each scaled to its own largest |value|."""
    from plotly.subplots import make_subplots

    rows = -(-len(steps) // columns)
    n_heads = max((len(s.value) for s in steps if s.axes[0] == "head"), default=1)
    titles = [plain(f"{s.name} {s.shape}") for s in steps]
    figure = make_subplots(rows=rows, cols=columns, subplot_titles=titles, vertical_spacing=0.06)
    for i, step in enumerate(steps):
        value = step.value[head_of(step, head, n_heads)] if step.axes[0] == "head" else step.value
        value = value[:, None] if value.ndim == 1 else value
        value = pool(np.nan_to_num(value.astype(np.float32)), 48)
        limit = float(np.abs(value).max()) or 1.0
        figure.add_trace(
            go.Heatmap(
                z=value / limit,
                zmin=-1,
                zmax=1,
                zmid=0,
                colorscale=DIVERGING,
                showscale=False,
                hovertemplate=f"{in_template(step.name)}: %{{z:.3f}} × {limit:.3g}<extra></extra>",
            ),
            row=i // columns + 1,
            col=i % columns + 1,
        )
    figure.update_xaxes(showticklabels=False)
    figure.update_yaxes(showticklabels=False, autorange="reversed")
    figure.update_annotations(font_size=11)
    figure.update_layout(
        title=f"Every intermediate, in the order the code computes it (per-head arrays: head {head})",
        height=170 * rows + 80,
        margin=margin(top=70),
    )
    return figure


def moe_routing(routing, regions: tuple[str, ...]) -> go.Figure:
    """Held-out points coloured by the expert the router sent them to, quadrant borders drawn."""
    figure = go.Figure()
    for expert in range(len(routing.load)):
        picked = routing.chosen == expert
        figure.add_trace(
            go.Scattergl(
                x=routing.points[picked, 0],
                y=routing.points[picked, 1],
                mode="markers",
                marker={"size": 4, "color": PALETTE[expert % len(PALETTE)]},
                name=f"expert {expert + 1} ({routing.load[expert]:.0%} of points)",
            )
        )
    figure.add_hline(y=0, line_color="grey")
    figure.add_vline(x=0, line_color="grey")
    for (x, y), text in zip(((-2, -4.2), (-2, 4.2), (2, -4.2), (2, 4.2)), regions, strict=True):
        figure.add_annotation(x=x, y=y, text=plain(text), showarrow=False)
    figure.update_layout(
        title="Where the router sends each held-out point",
        xaxis={"title": "x", "range": [-5, 5]},
        yaxis={"title": "y", "range": [-5, 5], "scaleanchor": "x"},
        height=460,
        margin=margin(top=40),
    )
    return figure


def moe_by_region(by_region: np.ndarray, regions: tuple[str, ...]) -> go.Figure:
    """Share of each quadrant's points sent to each expert."""
    experts = [f"expert {i + 1}" for i in range(by_region.shape[1])]
    figure = go.Figure(
        go.Heatmap(
            z=by_region,
            x=experts,
            y=plain_all(regions),
            colorscale=scale("sequential"),
            zmin=0,
            zmax=1,
            text=np.round(by_region, 2),
            texttemplate="%{text}",
            hovertemplate="%{y} → %{x}: %{z:.2f}<extra></extra>",
        )
    )
    figure.update_layout(title="Each region's points, by expert", height=300, margin=margin(top=40))
    figure.update_yaxes(autorange="reversed")
    return figure


def _box_column(figure: go.Figure, labels, x: float, highlight: int | None, colour: str) -> list[float]:
    """Boxes from top to bottom at x with arrows between them; returns their centres' y."""
    ys = [1.0 - (i + 0.5) / len(labels) for i in range(len(labels))]
    for i, (label, y) in enumerate(zip(labels, ys, strict=True)):
        fill = colour if i == highlight else "#f2f2f2"
        figure.add_shape(type="rect", x0=x - 0.2, x1=x + 0.2, y0=y - 0.035, y1=y + 0.035, fillcolor=fill,
                         line={"color": "#555"})  # fmt: skip
        figure.add_annotation(x=x, y=y, text=plain(label), showarrow=False, font={"size": 13})
        if i:
            figure.add_annotation(x=x, y=y + 0.035, ax=x, ay=ys[i - 1] - 0.035, xref="x", yref="y", axref="x",
                                  ayref="y", showarrow=True, arrowhead=2, text="")  # fmt: skip
    return ys


def conformer_diagram(modules, conv_layers, kernel: int) -> go.Figure:
    """The Conformer block top to bottom, its convolution module opened beside it."""
    figure = go.Figure()
    block_labels = [f"+ {m}" if i < len(modules) - 1 else m for i, m in enumerate(modules)]
    conv_at = 2
    block_ys = _box_column(figure, ["input frames (B, T, d)", *block_labels], 0.25, conv_at + 1, "#fdd0a2")
    conv_labels = [label.replace("k frames", f"{kernel} frames") for label in conv_layers]
    conv_ys = _box_column(figure, conv_labels, 0.8, 3, "#fdd0a2")
    for y in (conv_ys[0], conv_ys[-1]):
        figure.add_shape(type="line", x0=0.45, x1=0.6, y0=block_ys[conv_at + 1], y1=y,
                         line={"color": "#e6550d", "dash": "dot"})  # fmt: skip
    figure.update_xaxes(visible=False, range=[0, 1.05])
    figure.update_yaxes(visible=False, range=[0, 1])
    figure.update_layout(
        title="Conformer block (left) and its convolution module (right); every + adds to the residual stream",
        height=460,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        plot_bgcolor="white",
    )
    return figure


def conformer_reads(reads) -> go.Figure:
    """How much one output frame depends on each input frame, per part, each scaled to its largest."""
    figure = go.Figure()
    for name, values in reads.by_part.items():
        peak = float(values.max()) or 1.0
        figure.add_trace(go.Scatter(y=values / peak, mode="lines", name=plain(name)))
    half = reads.kernel // 2
    figure.add_vrect(x0=reads.frame - half - 0.5, x1=reads.frame + half + 0.5, fillcolor="#fdd0a2", opacity=0.5,
                     line_width=0, layer="below")  # fmt: skip
    figure.update_layout(
        title=f"What output frame {reads.frame} reads: |∂y_t/∂x_j| summed over features, scaled to each part's largest",
        xaxis_title="input frame j (10 ms each)",
        yaxis={
            "title": "share of the largest (log; exact zeros not drawn)",
            "type": "log",
            "exponentformat": "power",
        },
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )
    return figure


def truncated_costs(rows, left: int, right: int) -> go.Figure:
    """Pairs scored by full and by truncated attention against the number of frames, both axes log."""
    frames = [row.frames for row in rows]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(x=frames, y=[row.full for row in rows], mode="lines+markers", name="full: T²")
    )
    figure.add_trace(
        go.Scatter(
            x=frames,
            y=[row.truncated for row in rows],
            mode="lines+markers",
            name=f"truncated: {left} back, {right} ahead",
        )
    )
    figure.update_layout(
        title="Query-key pairs scored per head and layer, as the speech grows",
        xaxis={"title": "frames T (10 ms each; log)", "type": "log", "exponentformat": "power"},
        yaxis={"title": "pairs (log)", "type": "log", "exponentformat": "power"},
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )
    return figure
