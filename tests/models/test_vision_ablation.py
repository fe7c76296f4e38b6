"""Head ablation on a vision transformer: the class probabilities equal an independent computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers as tf
from conftest import ROOT
from tiny_models import tiny_model

from txviz.core.errors import UserError
from txviz.models import LoadedModel
from txviz.vision.ablation import ablate_head
from txviz.vision.runs import pixel_values
from txviz.vision.samples import sample_image, sample_names

DIGITS_VIT = ROOT / "assets" / "models" / "digits-vit"


@pytest.fixture(scope="module")
def digits_vit():
    from txviz import models

    return models.load("digits-vit", "cpu")


@pytest.fixture(scope="module")
def reference():
    """The same weights in transformers' eager attention, with no txviz in the way."""
    return tf.ViTForImageClassification.from_pretrained(DIGITS_VIT, attn_implementation="eager").eval()


def _by_hand(reference, pixels: torch.Tensor, layer: int, head: int | None) -> np.ndarray:
    """Class probabilities with the head's slice of the output projection's input zeroed by a hook."""
    attention = reference.vit.layers[layer].attention
    d = reference.config.hidden_size // reference.config.num_attention_heads

    def zero(module, args):
        x = args[0].clone()
        x[..., head * d : (head + 1) * d] = 0
        return (x,)

    handle = attention.o_proj.register_forward_pre_hook(zero) if head is not None else None
    try:
        with torch.no_grad():
            logits = reference(pixel_values=pixels).logits[0]
    finally:
        if handle is not None:
            handle.remove()
    return torch.softmax(logits.double(), -1).numpy()


@pytest.mark.parametrize(("layer", "head"), [(0, 3), (0, 0), (2, 1), (3, 2)])
def test_ablated_probabilities_equal_a_hooked_eager_model(digits_vit, reference, layer, head):
    image = sample_image(sample_names()[0])
    pixels = pixel_values(digits_vit.processor, image)
    result = ablate_head(digits_vit, image, layer, head)
    np.testing.assert_allclose(result.before, _by_hand(reference, pixels, layer, None), atol=1e-6)
    np.testing.assert_allclose(result.after, _by_hand(reference, pixels, layer, head), atol=1e-6)
    assert result.change == pytest.approx(result.after[result.predicted] - result.before[result.predicted])


def test_the_comparison_tells_heads_apart(digits_vit, reference):
    """Ablating head 3 of layer 0 moves the prediction, and by a different amount than head 2 does."""
    image = sample_image(sample_names()[0])
    pixels = pixel_values(digits_vit.processor, image)
    result = ablate_head(digits_vit, image, 0, 3)
    assert np.abs(result.after - result.before).max() > 1e-3
    assert np.abs(result.after - _by_hand(reference, pixels, 0, 2)).max() > 1e-4


def test_a_model_without_a_classification_head_or_that_head_is_refused(digits_vit):
    image = sample_image(sample_names()[0])
    with pytest.raises(UserError, match="heads 0 to 3"):
        ablate_head(digits_vit, image, 0, 4)
    model = tiny_model("deit")  # a DeiT encoder, no record: its heads are found by discovery
    processor = tf.ViTImageProcessor(size={"height": 32, "width": 32})
    loaded = LoadedModel("tiny-deit", "vision", model, None, processor, "cpu")
    with pytest.raises(UserError, match="no classification head"):
        ablate_head(loaded, image, 1, 1)
