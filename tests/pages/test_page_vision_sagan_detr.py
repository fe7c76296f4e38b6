"""The ViT page's SAGAN and DETR tab: the attention of a query over the whole photograph, and the
Hungarian matching of object queries to the digits of a canvas, both computed and shown with their numbers."""

from __future__ import annotations

import json

import numpy as np
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.vision import detr, sagan

PAGE = str(ROOT / "pages/10_Vision_Transformer.py")
TAB = "SAGAN and DETR"


def titles(at: AppTest) -> list[str]:
    return [json.loads(e.proto.spec)["layout"]["title"]["text"] for e in at.get("plotly_chart")]


def test_the_tab_computes_sagan_and_detr():
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["vit_view"] = TAB
    at.run()
    assert_clean(at)
    view = sagan.query_view("china.jpg", 10, 20)
    assert any(f"{view.outside_window:.1%} beyond it" in t for t in titles(at))
    found = detr.scene(0, 3)
    assert any(f"least total cost {found.total_cost():.2f}" in t for t in titles(at))
    assert any("seed 0, so the score" in c.value for c in at.caption)

    at.slider(key="sagan_row").set_value(3).run()
    at.radio(key="sagan_photo").set_value("flower.jpg").run()
    assert_clean(at)
    view = sagan.query_view("flower.jpg", 3, 20)
    assert any(f"{view.outside_window:.1%} beyond it" in t for t in titles(at))

    at.number_input(key="detr_seed").set_value(4).run()
    at.selectbox(key="detr_digits").set_value(2).run()
    assert_clean(at)
    found = detr.scene(4, 2)
    assert any(f"least total cost {found.total_cost():.2f}" in t for t in titles(at))
    table = at.dataframe[0].value
    assert len(table) == detr.QUERIES
    assert (table["matched to"] == "∅: no object").sum() == detr.QUERIES - 2
    matched = table[table["matched to"] != "∅: no object"]
    np.testing.assert_allclose(matched["cost"].sum(), found.total_cost(), atol=0.02)
