"""The ViT page's book tab: a 224 px photograph in 196 patches of 16 x 16 px, one patch flattened to
768 values as drawn, and the book's transfer table beside the learning curves on the model tab."""

from __future__ import annotations

import json

import numpy as np
from conftest import ROOT, assert_clean, plotly_array
from streamlit.testing.v1 import AppTest

from txviz.vision import book

PAGE = str(ROOT / "pages/10_Vision_Transformer.py")
BOOK_TAB = "ViT-Base as the books draw it"


def specs(at: AppTest) -> list[dict]:
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


def title(spec: dict) -> str:
    return spec["layout"].get("title", {}).get("text", "")


def test_the_book_tab_cuts_flattens_and_projects():
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["vit_view"] = BOOK_TAB
    at.run()
    assert_clean(at)
    titles = [title(s) for s in specs(at)]
    assert any("224 x 224 px: 14 x 14 = 196 patches of 16 x 16 px; patch 90" in t for t in titles)
    assert any(
        t.startswith("z0, the encoder's input: 197 tokens ([CLASS] + 196 patches) x D = 768") for t in titles
    )
    assert any("No model runs in this tab" in c.value for c in at.caption)
    at.slider(key="book_patch").set_value(15).run()
    at.radio(key="book_photo").set_value("flower.jpg").run()
    assert_clean(at)
    flatten = next(s for s in specs(at) if s["data"][0].get("name") == "R channel")
    drawn = np.zeros(768)
    for trace in flatten["data"][:3]:  # R, G, B: every third value of the flattened patch
        drawn[plotly_array(trace["x"]).astype(int)] = plotly_array(trace["y"])
    image = book.square_photo("flower.jpg")
    patch = image[16:32, 16:32]  # patch 15: row 1, column 1 of the 14 x 14 grid
    np.testing.assert_allclose(drawn, patch.reshape(-1) / 127.5 - 1, atol=1e-6)
    assert any("patch 15 outlined" in title(s) for s in specs(at))


def test_the_model_tab_sets_the_papers_transfer_table_beside_the_curves():
    at = AppTest.from_file(PAGE, default_timeout=180).run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "pre-trained on" in d.value.columns)
    assert list(table["images"]) == ["1.3M", "14M", "303M"]
    assert list(table["classes"]) == ["1k", "21k", "18k"]
    assert any("Dosovitskiy et al. 2021" in c.value for c in at.caption)
    assert any("the table beside them is the ViT paper's figures" in c.value for c in at.caption)
    assert any(c.value == book.BOOK_READING for c in at.caption)  # the book groups 21k with JFT
    assert any(m.value == f"**{book.TITLE}**" for m in at.markdown)
