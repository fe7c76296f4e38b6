"""What the page shows of an overview and a drill-down: choices applied, figures built."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from txviz.core.errors import UserError
from txviz.longdoc import figures
from txviz.longdoc.drill import Rows, context
from txviz.longdoc.overview import SUMMARIES, Overview
from txviz.longdoc.spans import to_paragraphs

TILE_STATS = ("mean", "max")
LEVELS = ("sentences", "paragraphs")
MAX_KEYS = 256  # keys drawn cell by cell in a drill-down (each cell carries its hover text)


def _heads(values: np.ndarray, head: int | None, how: str = "mean") -> np.ndarray:
    """[head, ...] -> one head, or the mean (max) over heads when head is None."""
    if head is not None:
        return values[head]
    return values.max(axis=0) if how == "max" else values.mean(axis=0)


def _mapped(view: Overview, layer: int) -> None:
    """Maps are held for one layer: another layer needs its own overview pass."""
    if layer != view.layer:
        raise ValueError(f"This overview holds layer {view.layer}'s maps, not layer {layer}'s.")


def pooled(view: Overview, layer: int, head: int | None, stat: str = "mean") -> np.ndarray:
    """The pooled map of one head (or every head's mean, or max) of a layer."""
    if stat not in TILE_STATS:
        raise UserError(f"Tiles show the {' or '.join(TILE_STATS)} weight, not {stat!r}.")
    _mapped(view, layer)
    return _heads(view.pooled_mean if stat == "mean" else view.pooled_max, head, stat)


def span_map(view: Overview, layer: int, head: int | None, level: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """Attention between sentences or paragraphs of one head (or the heads' mean) of a layer."""
    if level not in LEVELS:
        raise UserError(f"Aggregate to {' or '.join(LEVELS)}, not {level!r}.")
    _mapped(view, layer)
    matrix = _heads(view.sentences, head)
    if level == "sentences":
        return matrix, view.spans.labels
    return to_paragraphs(matrix, view.spans), view.spans.paragraph_labels


def head_label(layer: int, head: int | None) -> str:
    return f"layer {layer}, " + ("mean of heads" if head is None else f"head {head}")


def first_view(
    view: Overview,
    layer: int,
    head: int | None,
    stat: str = "mean",
    level: str = "sentences",
    log_scale: bool = True,
    presenting: bool = False,
) -> dict[str, go.Figure]:
    """The overview's figures: summaries, the pooled map, the span map and the sinks."""
    matrix, labels = span_map(view, layer, head, level)
    return {
        "summaries": figures.summaries_figure({n: getattr(view, n) for n in SUMMARIES}, presenting),
        "pooled": figures.pooled_figure(
            pooled(view, layer, head, stat),
            view.tile,
            f"{view.model_name}, {head_label(layer, head)}: {stat} of each {view.tile} x {view.tile} tile",
            log_scale,
            presenting,
        ),
        "spans": figures.span_figure(
            matrix, labels, f"{level.capitalize()}, {head_label(layer, head)}", log_scale, presenting
        ),
        "sinks": figures.sinks_figure(
            _heads(view.received, head), view.tokens, head_label(layer, head), presenting=presenting
        ),
    }


def key_window(start: int, stop: int, n_tokens: int) -> tuple[int, int]:
    """At most MAX_KEYS keys, inside the text."""
    start = min(max(0, start), n_tokens - 1)
    return start, min(max(stop, start + 1), start + MAX_KEYS, n_tokens)


def detail(
    view: Overview,
    text: str,
    rows: Rows,
    head: int | None,
    keys: tuple[int, int],
    log_scale: bool = False,
    presenting: bool = False,
) -> dict[str, go.Figure]:
    """A drill-down's figures: the exact rows on a window of keys, and the rows over the whole text."""
    weights = _heads(rows.weights, head)  # (R, T)
    k0, k1 = key_window(*keys, view.n_tokens)
    queries, key_range = range(rows.start, rows.stop), range(k0, k1)
    around = lambda p: context(text, view.offsets, view.tokens, p)  # noqa: E731
    title = f"Exact attention, {head_label(rows.layer, head)}: queries {rows.start}-{rows.stop - 1}, keys {k0}-{k1 - 1}"
    return {
        "rows": figures.rows_figure(
            weights[:, k0:k1],
            list(queries),
            list(key_range),
            [view.tokens[p] for p in queries],
            [view.tokens[p] for p in key_range],
            [around(p) for p in queries],
            [around(p) for p in key_range],
            title,
            log_scale,
            presenting,
        ),
        "profile": figures.row_profile_figure(weights.mean(axis=0), view.tokens, rows.start, rows.stop),
    }


def first_view_bytes(figures_by_name: dict[str, go.Figure]) -> int:
    """What the browser receives for these figures: their plotly JSON."""
    return sum(len(f.to_json()) for f in figures_by_name.values())
