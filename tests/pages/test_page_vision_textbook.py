"""The ViT page against the book: ViT-Base's 16 x 16 patches beside the model's own, a learning-curve
axis zoomed to its data, and attention entropy in the Attention Explorer's unit."""

from __future__ import annotations

import json

import numpy as np
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.explorer import view_model as views
from txviz.vision import curves
from txviz.vision.stats import attention_entropy


def test_patch_sizes_curve_axis_and_entropy_unit() -> None:
    at = AppTest.from_file(str(ROOT / "pages/10_Vision_Transformer.py"), default_timeout=180).run()
    assert_clean(at)
    captions = [c.value for c in at.caption]
    assert any("224 px image into 16 x 16 px patches: a 14 x 14 grid, 196" in c for c in captions)
    assert any("24 x 24 px input in 4 x 4 px patches, 6 x 6 = 36" in c for c in captions)  # digits-vit
    specs = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    curve = next(s for s in specs if s["layout"]["title"]["text"].startswith("Held-out accuracy"))
    shipped = curves.load()
    drawn = 100 * np.array([*shipped.accuracy.values(), shipped.baselines["pixel_logistic_regression"]])
    low, high = curve["layout"]["yaxis"]["range"]
    assert 0 < low <= drawn.min() and drawn.max() <= high <= 100 and high - low <= 40  # 74-99%: not 0-100
    assert "most common digit" in curve["layout"]["title"]["text"]
    stats = next(s for s in specs if "Attention entropy" in json.dumps(s["layout"]))
    assert "Attention entropy (nats)" in json.dumps(stats["layout"]) and "bits" not in json.dumps(stats)


def test_entropy_is_the_attention_explorers() -> None:
    weights = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3, 5))
    trace = type("Trace", (), {"weights": weights.astype(np.float32)})()
    np.testing.assert_allclose(attention_entropy(weights), views.entropy(trace), rtol=1e-5)
