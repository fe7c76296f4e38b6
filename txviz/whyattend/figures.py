"""The parts x parts matrix of one score (altair: Vega draws its labels as text, never as HTML)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from txviz.whyattend.decompose import Decomposition

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
            x=alt.X("key part:N", sort=names_k, title="built the key"),
            y=alt.Y("query part:N", sort=names_q, title="built the query"),
            color=alt.Color("adds:Q", scale=scale),
            tooltip=["query part", "key part", alt.Tooltip("adds:Q", format="+.4f")],
        )
        .properties(title=f"{d.mode} score {d.score:+.3f} as query part x key part", height=alt.Step(14))
    )
