"""Clickable [layer, head] grids: the chart's cells and the head a click event picks."""

import math

import numpy as np
import pytest

from txviz.figures.grids import PICK, head_grid, picked_head


@pytest.mark.parametrize(
    "selection, expected",
    [
        ({PICK: [{"layer": 2, "head": 5}]}, (2, 5)),  # Streamlit's point selection: the clicked cells
        ({PICK: [{"layer": 0, "head": 1}, {"layer": 3, "head": 0}]}, (3, 0)),  # shift-click: the newest
        ({PICK: {"layer": [1], "head": [4]}}, (1, 4)),  # Vega's field-to-values form
        ({PICK: [{"layer": 1.0, "head": "2"}]}, (1, 2)),  # numbers as JSON may give them
        ({PICK: []}, None),  # cleared
        ({PICK: {}}, None),
        ({}, None),
        (None, None),
        ({"other": [{"layer": 1, "head": 1}]}, None),  # another chart's selection
        ({PICK: [{"layer": 1}]}, None),  # a cell without a head: nothing to pick
    ],
)
def test_a_click_event_gives_the_layer_and_head(selection, expected):
    assert picked_head(selection) == expected


def test_the_grid_has_one_cell_per_head_with_its_value_and_a_click_selection():
    values = np.arange(6, dtype=float).reshape(2, 3)
    values[1, 2] = np.nan
    spec = head_grid(values, "t", "nats", pick=(1, 0)).to_dict()
    cells, outline = spec["layer"]
    rows = spec["datasets"][cells["data"]["name"]]
    assert len(rows) == 6
    for row in rows:
        expected = values[row["layer"], row["head"]]
        assert (row["value"] is None) if math.isnan(expected) else row["value"] == expected
    (param,) = spec["params"] if "params" in spec else cells["params"]
    assert param["name"] == PICK and param["select"]["fields"] == ["layer", "head"]
    assert spec["datasets"][outline["data"]["name"]] == [{"layer": 1, "head": 0}]


def test_a_one_layer_one_head_grid_is_one_cell():
    spec = head_grid(np.array([[0.5]]), "t").to_dict()
    (cells,) = spec["layer"]
    data = cells.get("data") or spec["data"]  # altair hoists a lone layer's data to the top
    assert spec["datasets"][data["name"]] == [{"layer": 0, "head": 0, "value": 0.5}]
