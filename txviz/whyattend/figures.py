"""The parts x parts matrix of one score (altair: Vega draws its labels as text, never as HTML)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from txviz.explorer.view_model import PRONOUNS
from txviz.whyattend.decompose import Decomposition

PART_ROW = 20  # px a row of the parts matrix: Vega hid every other 11 px label at 14
MAX_PARTS = 40  # a matrix of every head of a 30-layer model is unreadable: the largest rows and columns


def _largest(sums: np.ndarray, keep: int) -> np.ndarray:
    return np.sort(np.argsort(-np.abs(sums))[:keep])


def pairs_heatmap(d: Decomposition, keep: int = MAX_PARTS) -> alt.Chart:
    """Rows: the query's parts, columns: the key's, colour: what each pair adds (red +, blue -);
    only the ``keep`` largest rows and columns by their sums."""
    rows, cols = _largest(d.query_sums, keep), _largest(d.key_sums, keep)
    names_q = [d.parts_q[n].name for n in rows]
    names_k = [d.parts_k[n].name for n in cols]
    grid = d.pairs[np.ix_(rows, cols)]
    table = pd.DataFrame(
        [(q, k, float(grid[a, b])) for a, q in enumerate(names_q) for b, k in enumerate(names_k)],
        columns=["query part", "key part", "adds"],
    )
    bound = float(np.abs(grid).max()) or 1.0
    scale = alt.Scale(scheme="redblue", domain=[-bound, bound], reverse=True)
    return (
        alt.Chart(table)
        .mark_rect()
        .encode(
            # whole names (Vega cuts labels past 180 px by default), one per row with room to spare
            x=alt.X("key part:N", sort=names_k, title="built the key", axis=alt.Axis(labelLimit=0)),
            y=alt.Y("query part:N", sort=names_q, title="built the query", axis=alt.Axis(labelLimit=0)),
            color=alt.Color("adds:Q", scale=scale),
            tooltip=["query part", "key part", alt.Tooltip("adds:Q", format="+.4f")],
        )
        .properties(
            title=f"{d.mode} score {d.score:+.3f} as query part x key part", height=alt.Step(PART_ROW)
        )
    )


EDGE = "edge"  # the point selection's name: Streamlit reports clicked cells under it


def edge_grid(weights: np.ndarray, tokens: list[str], pick: tuple[int, int]) -> alt.LayerChart:
    """One head's attention (query x key); a click on a cell selects that edge, the picked one is outlined.
    Tokens reach the tooltip as text (Vega never reads it as HTML)."""
    n = len(weights)
    grid = np.indices(weights.shape).reshape(2, -1)
    table = pd.DataFrame({"query": grid[0], "key": grid[1], "weight": weights.astype(float).ravel()})
    table["query token"] = [tokens[q] for q in table["query"]]
    table["key token"] = [tokens[k] for k in table["key"]]
    click = alt.selection_point(name=EDGE, fields=["query", "key"], on="click", clear=False)
    cells = (
        alt.Chart(table)
        .mark_rect()
        .encode(
            x=alt.X("key:O", title="key position"),
            y=alt.Y("query:O", title="query position"),
            color=alt.Color("weight:Q", scale=alt.Scale(scheme="viridis", domain=[0, 1])),
            tooltip=["query", "query token", "key", "key token", alt.Tooltip("weight:Q", format=".3f")],
        )
        .add_params(click)
    )
    outline = alt.Chart(pd.DataFrame({"query": [pick[0]], "key": [pick[1]]})).mark_rect(
        fill=None, stroke="#d62728", strokeWidth=3
    )
    step = max(6, min(22, 600 // max(n, 1)))
    return alt.layer(cells, outline.encode(x="key:O", y="query:O")).properties(
        title="the head's attention: click a cell to explain it", height=alt.Step(step)
    )


def default_edge(weights: np.ndarray, tokens: list[str], special: set[str]) -> tuple[int, int]:
    """The (query, key) the page opens on: an edge worth explaining, not one into a sink. The query is
    the text's first pronoun, else its last word; the key the word it attends to most, leaving out
    special tokens ([CLS], [SEP]), punctuation, the first position (a decoder's sink) and itself.
    Falls back to the last and first tokens where no such edge exists."""
    words = [i for i, t in enumerate(tokens) if t not in special and any(c.isalnum() for c in t)]
    if not words:
        return len(tokens) - 1, 0
    pronouns = [i for i in words if tokens[i].lstrip("Ġ▁#").lower() in PRONOUNS]
    query = pronouns[0] if pronouns else words[-1]
    keys = [k for k in words if k not in (0, query) and weights[query, k] > 0]
    if not keys:
        return query, 0 if query else min(1, len(tokens) - 1)
    return query, max(keys, key=lambda k: weights[query, k])


def picked_edge(selection) -> tuple[int, int] | None:
    """The (query, key) of the cell a click selected, from a chart event's selection; None if none."""
    cells = (selection or {}).get(EDGE) or []
    if isinstance(cells, dict):  # Vega's own form: {"query": [2], "key": [5]}
        cells = [{field: (v[0] if isinstance(v, list) and v else v) for field, v in cells.items()}]
    for cell in reversed(list(cells)):
        try:
            return int(cell["query"]), int(cell["key"])
        except (KeyError, TypeError, ValueError):
            continue
    return None
