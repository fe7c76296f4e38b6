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


def test_a_link_keeps_the_query_the_photograph_and_the_canvas():
    at = AppTest.from_file(PAGE, default_timeout=180)
    link = {"vit_view": TAB, "sagan_photo": "flower.jpg", "sagan_row": 5, "sagan_col": 7, "detr_seed": 9,
            "detr_digits": 4}  # fmt: skip
    at.query_params.update({k: json.dumps(v) for k, v in link.items()})
    at.run()
    assert_clean(at)
    assert (at.radio(key="sagan_photo").value, at.slider(key="sagan_row").value) == ("flower.jpg", 5)
    assert (at.slider(key="sagan_col").value, at.number_input(key="detr_seed").value) == (7, 9)
    assert at.selectbox(key="detr_digits").value == 4
    assert any(f"least total cost {detr.scene(9, 4).total_cost():.2f}" in t for t in titles(at))
