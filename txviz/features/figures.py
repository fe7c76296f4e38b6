"""The Features page's figures: a feature's top contexts with each token shaded by its activation, the
tokens it promotes and suppresses, and every feature on one map (how often against how strongly)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from txviz.figures.axes import margin
from txviz.figures.colors import scale
from txviz.figures.text import plain, plain_all

PICKED = "#d62728"


def visible(token: str) -> str:
    """A token as a cell shows it: a newline as ↵, a token of spaces or tabs as ␣ (else an empty-looking cell)."""
    shown = token.replace("\n", "↵").replace("\t", "⇥")
    return shown if shown.strip() else "␣" * max(1, len(shown))


def contexts(
    rows: Sequence[Sequence[str]],
    values: np.ndarray,
    peaks: Sequence[float],
    title: str,
    presenting: bool = False,
):
    """One row per context: its tokens as text on cells shaded by the feature's activation (0 to the peak)."""
    values = np.asarray(values, dtype=float)  # (rows, columns), NaN where a short context has no token
    width = values.shape[1] if values.size else 1
    text = [[plain(visible(t)) for t in row] + [""] * (width - len(row)) for row in rows]
    labels = [f"#{i + 1} ({peak:.2f})" for i, peak in enumerate(peaks)]
    top = float(np.nanmax(values)) if np.isfinite(values).any() else 1.0
    figure = go.Figure(
        go.Heatmap(
            z=values, text=text, texttemplate="%{text}", textfont=dict(size=15 if presenting else 11),
            y=labels, colorscale=scale("sequential", presenting), zmin=0, zmax=max(top, 1e-6),
            colorbar=dict(title="activation"), xgap=1, ygap=3,
            hovertemplate="%{text}: %{z:.3f}<extra></extra>",
        )
    )  # fmt: skip
    figure.update_layout(
        title=plain(title), height=max(260, 34 * len(rows) + 110), margin=margin(left=90),
        xaxis=dict(visible=False), yaxis=dict(type="category", autorange="reversed", title="context (its peak)"),
    )  # fmt: skip
    return figure


def logit_effects(promoted, suppressed, title: str):
    """The tokens the feature's direction raises and lowers most through the unembedding, as bars."""
    figure = make_subplots(rows=1, cols=2, subplot_titles=("promotes", "suppresses"), horizontal_spacing=0.2)
    for col, pairs, colour in ((1, promoted, "#2a9d8f"), (2, suppressed, "#c0392b")):
        tokens, effects = [p[0] for p in pairs], [p[1] for p in pairs]
        figure.add_trace(
            go.Bar(x=effects, y=[repr(t) for t in tokens], orientation="h", marker_color=colour,
                   hovertemplate="%{y}: %{x:.3f}<extra></extra>", showlegend=False),
            row=1, col=col,
        )  # fmt: skip
        figure.update_yaxes(autorange="reversed", ticktext=plain_all(repr(t) for t in tokens),
                            tickvals=[repr(t) for t in tokens], row=1, col=col)  # fmt: skip
    figure.update_layout(title=plain(title), height=400, margin=margin(top=90, left=10))
    figure.update_xaxes(title_text="logit per unit of activation")
    return figure


def feature_map(
    density: np.ndarray, mean: np.ndarray, picked: int | None, title: str, presenting: bool = False
):
    """Every feature that fired at its density (log) and mean activation; a click picks one (customdata)."""
    live = np.flatnonzero(density > 0)
    figure = go.Figure(
        go.Scattergl(
            x=density[live], y=mean[live], mode="markers", customdata=live,
            marker=dict(size=5, color=np.log10(density[live]), colorscale=scale("sequential", presenting),
                        colorbar=dict(title="log10 density"), opacity=0.7),
            hovertemplate="feature %{customdata}<br>density %{x:.2e}<br>mean %{y:.3f}<extra></extra>",
        )
    )  # fmt: skip
    if picked is not None and density[picked] > 0:
        figure.add_trace(go.Scatter(
            x=[density[picked]], y=[mean[picked]], mode="markers", hoverinfo="skip",
            marker=dict(color="rgba(0,0,0,0)", size=16, line=dict(color=PICKED, width=3)),
        ))  # fmt: skip
    figure.update_layout(
        title=plain(title), xaxis=dict(type="log", title="density (share of tokens it fires on)"),
        yaxis_title="mean activation when it fires", showlegend=False, height=460, margin=margin(),
    )  # fmt: skip
    return figure


def picked_feature(selection) -> int | None:
    """The feature of the point a click on the map selected, or None."""
    for point in reversed(list((selection or {}).get("points") or [])):
        data = point.get("customdata")
        if isinstance(data, (int, float)) or (isinstance(data, str) and data.isdigit()):
            return int(data)
        if isinstance(data, (list, tuple)) and data:
            return int(data[0])
    return None


def head_shares(shares: np.ndarray, title: str):
    """One bar per head: its slice's share of the feature's decoder direction (squared norms, summing to 1)."""
    figure = go.Figure(
        go.Bar(x=[f"head {h}" for h in range(len(shares))], y=shares, marker_color="#4c78a8",
               hovertemplate="%{x}: %{y:.1%}<extra></extra>")
    )  # fmt: skip
    figure.update_layout(title=plain(title), yaxis=dict(title="share", tickformat=".0%", range=[0, 1]), height=320,
                         margin=margin())  # fmt: skip
    return figure
