"""The shipped tiny ViT (digits-vit) and ViT families loaded through the registry."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import ROOT
from tiny_models import tiny_model

from txviz.vision.runs import pixel_values, trace_image
from txviz.vision.samples import sample_image
from txviz.vision.stats import (
    VIEWS,
    cls_attention,
    overlay_values,
)

DIGITS_VIT = ROOT / "assets" / "models" / "digits-vit"


# --- the shipped tiny ViT ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits_vit():
    from txviz import models

    return models.load("digits-vit", "cpu")


def test_shipped_vit_reaches_its_stated_accuracy(digits_vit):
    from txviz.training import vit

    meta = json.loads((DIGITS_VIT / "txviz.json").read_text())
    assert meta["kind"] == "vision" and digits_vit.kind == "vision"
    _, x_test, _, y_test = vit.split_digits(meta["seed"])
    pixels = vit.pixel_values(digits_vit.processor, x_test)
    measured = vit.accuracy(digits_vit.model, pixels, torch.as_tensor(y_test))
    assert len(y_test) == meta["heldout_images"]
    assert measured == pytest.approx(meta["heldout_accuracy"], abs=0.003)
    assert measured >= 0.9


def test_captured_attention_equals_eager_output_attentions(digits_vit):
    from transformers import ViTForImageClassification

    eager = ViTForImageClassification.from_pretrained(DIGITS_VIT, attn_implementation="eager")
    image = sample_image("digit 3 (held out from training)")
    result = trace_image(digits_vit, image)
    pixels = pixel_values(digits_vit.processor, image)
    with torch.no_grad():
        reference = eager.eval()(pixel_values=pixels, output_attentions=True)
    expected = torch.stack(reference.attentions)[:, 0].numpy()  # (L, H, T, T)
    assert result.trace.weights.shape == expected.shape == (4, 4, 37, 37)
    assert np.allclose(result.trace.weights, expected, atol=1e-6)
    probabilities = torch.softmax(reference.logits[0].double(), -1).numpy()
    assert np.allclose(result.probabilities, probabilities, atol=1e-6)
    assert result.top_class()[0] == "3"


def test_model_input_image_undoes_the_processor(digits_vit):
    image = sample_image("digit 5 (held out from training)")  # already 24 x 24
    result = trace_image(digits_vit, image)
    assert result.image.shape == (24, 24, 3)
    assert np.abs(result.image.astype(int) - np.asarray(image).astype(int)).max() <= 1


def test_overlay_views_give_grids_and_titles(digits_vit):
    result = trace_image(digits_vit, sample_image("shapes: shapes-0"))
    for view in VIEWS:
        values, title = overlay_values(result, view, layer=3, head=None, patch=7)
        assert values.shape == (6, 6) and title
    rollout_cls, _ = overlay_values(result, VIEWS[2], 3, None)
    assert rollout_cls.sum() <= 1.0
    with pytest.raises(ValueError):
        overlay_values(result, "nonsense", 0, None)


@pytest.mark.parametrize("family", ["deit", "dinov2_with_registers"])
def test_other_vit_families_drop_their_extra_tokens(tmp_path, family):
    """A DeiT (distillation token) or DINOv2 with registers, from a local folder via the registry."""
    from transformers.models.vit.image_processing_pil_vit import ViTImageProcessorPil

    from txviz import models

    model = tiny_model(family, capture=False)
    prefix = ("[CLS]", "[DIST]") if family == "deit" else ("[CLS]", "[REG0]", "[REG1]", "[REG2]")
    model.save_pretrained(tmp_path)
    ViTImageProcessorPil(size={"height": 32, "width": 32}).save_pretrained(tmp_path)

    loaded = models.load(str(tmp_path), "cpu")
    result = trace_image(loaded, sample_image("shapes: shapes-0"))
    assert result.grid.prefix_tokens == prefix and (result.grid.rows, result.grid.cols) == (4, 4)
    assert result.trace.weights.shape == (2, 2, len(prefix) + 16, len(prefix) + 16)
    assert result.probabilities is None  # no classification head
    values = cls_attention(result.trace.weights, result.grid, 1, 0)
    assert np.allclose(values.ravel(), result.trace.weights[1, 0, 0, len(prefix) :])
