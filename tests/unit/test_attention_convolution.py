"""Hand-set relative-position heads reproduce a convolution (Cordonnier et al. 2020)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from txviz.why import convolution as conv


@pytest.mark.parametrize("k", conv.KERNEL_SIZES)
def test_k_squared_heads_equal_torch_conv2d(k):
    rng = np.random.default_rng(k)
    image, kernel = rng.normal(size=(2, 9, 11)), rng.normal(size=(3, 2, k, k))  # 2 channels in, 3 out
    result = conv.attention_convolution(image, kernel, alpha=50.0, query=(0, 10))
    expected = F.conv2d(torch.tensor(image)[None], torch.tensor(kernel), padding=k // 2)[0].numpy()
    np.testing.assert_allclose(result.attention, expected, atol=1e-5)
    assert result.max_abs_difference < 1e-5
    assert len(conv.offsets(k)) == k * k and result.own_weight.min() > 1 - 1e-9


def test_each_head_attends_to_one_offset_and_together_to_the_local_window():
    result = conv.attention_convolution(np.ones((1, 7, 7)), np.ones((1, 1, 3, 3)), query=(3, 4))
    window = np.zeros((7, 7))
    window[2:5, 3:6] = 1.0  # the 3 x 3 local mask around (3, 4)
    np.testing.assert_allclose(result.query_window, window, atol=1e-12)
    for head, (dy, dx) in zip(result.query_heads, conv.offsets(3), strict=True):
        assert np.unravel_index(head.argmax(), head.shape) == (3 + dy, 4 + dx)
    corner = conv.attention_convolution(np.ones((1, 7, 7)), np.ones((1, 1, 3, 3)), query=(0, 0))
    assert corner.query_window.sum() == pytest.approx(4.0)  # five of the nine offsets fall on the padding


def test_soft_heads_blur_and_the_scores_are_the_quadratic_form():
    image = conv.digit(0)
    assert image.shape == (1, 24, 24) and image.min() >= 0.0 and image.max() <= 1.0
    kernel = conv.kernels(3)["sharpen"][None, None]
    assert conv.attention_convolution(image, kernel, alpha=0.3).max_abs_difference > 0.05
    delta = torch.tensor([[2.0, -1.0]], dtype=torch.float64)
    score = conv.quadratic_encoding(delta) @ conv.head_query((1, 1), 3.0)
    assert score.item() == pytest.approx(-3.0 * ((2 - 1) ** 2 + (-1 - 1) ** 2) + 3.0 * 2)
    with pytest.raises(conv.ConvolutionError, match="odd side"):
        conv.attention_convolution(image, np.ones((1, 1, 2, 2)))
