"""Clickable [layer, head] grids (altair), and the head a click on one picked.

Altair, not plotly: Streamlit reports clicks on an altair chart's cells through a point selection,
while a plotly heatmap's clicks come back empty (streamlit#8760). Vega draws titles and tooltips as
text, never as HTML, so text reaches these charts unescaped (escaping would show "&lt;" literally).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from txviz.figures.colors import scale_name

PICK = "pick"  # the point selection's name: Streamlit reports clicks under it
CELL_PIXELS = 22  # height of one layer's row


def head_grid(
    values: np.ndarray,
    title: str,
    unit: str = "score",
    pick: tuple[int, int] | None = None,
    presenting: bool = False,
    domain: tuple[float, float] | None = None,
    diverging: bool = False,
    extra: Mapping[str, np.ndarray] | None = None,
) -> alt.LayerChart:
    """One number per head as a [layer, head] grid; a click selects a cell, the picked head is outlined.

    ``diverging``: a red-white-blue scale with white at zero; ``extra``: more [layer, head] numbers
    shown in the tooltip, by name.
    """
    layers, heads = values.shape
    grid = np.indices(values.shape).reshape(2, -1)
    table = pd.DataFrame({"layer": grid[0], "head": grid[1], "value": values.astype(float).ravel()})
    table["value"] = table["value"].where(np.isfinite(table["value"]))  # NaN and inf: blank cells
    extra = dict(extra or {})
    for i, numbers in enumerate(extra.values()):
        table[f"extra{i}"] = np.asarray(numbers, dtype=float).ravel()  # columns by number: names are any text
    click = alt.selection_point(name=PICK, fields=["layer", "head"], on="click", clear=False)
    # Vega's "redblue" is ColorBrewer RdBu, the project's diverging scale (colors.scale_name)
    scheme = "redblue" if diverging else scale_name("sequential", presenting)
    bounds = {"domain": list(domain)} if domain else {}
    scale = alt.Scale(scheme=scheme, **bounds, **({"domainMid": 0} if diverging else {}))
    cells = (
        alt.Chart(table)
        .mark_rect()
        .encode(
            x=alt.X("head:O", title="head"),
            y=alt.Y("layer:O", title="layer"),
            color=alt.Color("value:Q", title=unit, scale=scale),
            tooltip=[
                alt.Tooltip("layer:O"),
                alt.Tooltip("head:O"),
                alt.Tooltip("value:Q", title=unit, format=".3f"),
                *[alt.Tooltip(f"extra{i}:Q", title=name, format=".3f") for i, name in enumerate(extra)],
            ],
        )
        .add_params(click)
    )
    layers_of = [cells]
    if pick is not None:
        picked = pd.DataFrame({"layer": [pick[0]], "head": [pick[1]]})
        outline = alt.Chart(picked).mark_rect(fill=None, stroke="#d62728", strokeWidth=3)
        layers_of.append(outline.encode(x="head:O", y="layer:O"))
    return alt.layer(*layers_of).properties(
        # a row height, not a total: a fixed total height is ignored for these ordinal rows in the page
        title=title,
        height=alt.Step(max(8, min(CELL_PIXELS, 900 // max(layers, 1)))),
    )


def picked_head(selection: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """The (layer, head) of the cell a click selected, from a chart event's selection; None if none.

    Streamlit gives a point selection as a list of the clicked cells' field values, e.g.
    {"pick": [{"layer": 2, "head": 5}]}, and {} or [] once nothing is selected.
    """
    cells = (selection or {}).get(PICK) or []
    if isinstance(cells, Mapping):  # Vega's own form: {"layer": [2], "head": [5]}
        cells = [{field: (v[0] if isinstance(v, list) and v else v) for field, v in cells.items()}]
    for cell in reversed(list(cells)):
        try:
            return int(cell["layer"]), int(cell["head"])
        except (KeyError, TypeError, ValueError):
            continue
    return None
