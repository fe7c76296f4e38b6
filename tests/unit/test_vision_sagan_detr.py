"""SAGAN's self-attention layer against a hand computation, and DETR's Hungarian matching against brute force."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from txviz.vision import detr, sagan
from txviz.vision.gan_detr_figures import detr_figure, sagan_figure


def small_map() -> torch.Tensor:
    return torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(1))


def test_sagan_layer_equals_a_hand_computation():
    x, weights = small_map(), sagan.random_weights(seed=3)
    gamma = 0.7
    attended = sagan.self_attention(x, weights, gamma)
    flat = x.reshape(3, -1)  # (C, N)
    n = flat.shape[1]
    f = torch.einsum("oc,cn->on", weights.f, flat)
    g = torch.einsum("oc,cn->on", weights.g, flat)
    h = torch.einsum("oc,cn->on", weights.h, flat)
    y = torch.empty_like(flat)
    for j in range(n):  # one query at a time, as the paper writes it
        s = torch.stack([f[:, i] @ g[:, j] for i in range(n)])
        beta = torch.exp(s) / torch.exp(s).sum()
        torch.testing.assert_close(attended.beta[j], beta)
        o = weights.v @ sum(beta[i] * h[:, i] for i in range(n))
        y[:, j] = gamma * o + flat[:, j]
    torch.testing.assert_close(attended.y, y.reshape(x.shape))


def test_sagan_gamma_zero_is_the_identity_and_rows_sum_to_one():
    x = sagan.feature_map("china.jpg", 16)
    attended = sagan.self_attention(x, sagan.random_weights(), gamma=0.0)
    assert torch.equal(attended.y, x)
    assert attended.beta.shape == (256, 256)
    torch.testing.assert_close(attended.beta.sum(1), torch.ones(256))


def test_sagan_query_view_reaches_the_whole_photograph():
    view = sagan.query_view("china.jpg", 16, 16)
    assert view.attention.shape == (32, 32) and view.image.shape == (32, 32, 3)
    np.testing.assert_allclose(view.attention.sum(), 1, rtol=1e-5)
    window = view.attention[15:18, 15:18].sum()
    assert view.outside_window == pytest.approx(1 - window, abs=1e-6)
    assert view.outside_window > 0.9  # most of the weight is where a 3 x 3 convolution cannot see
    spec = json.loads(sagan_figure(view).to_json())
    assert "row 16, column 16" in json.dumps(spec["layout"])


def test_generalized_iou_by_hand():
    a = np.array([[0.0, 0.0, 2.0, 2.0]])  # area 4
    b = np.array([[1.0, 1.0, 4.0, 3.0]])  # area 6, overlap 1 x 1, hull (0,0)-(4,3) of 12
    union = 4 + 6 - 1
    expected = 1 / union - (12 - union) / 12
    assert detr.generalized_iou(a, b)[0, 0] == pytest.approx(expected)
    assert detr.generalized_iou(a, a)[0, 0] == pytest.approx(1.0)
    far = np.array([[10.0, 10.0, 12.0, 12.0]])  # disjoint: IoU 0, GIoU below 0 towards -1
    assert -1 < detr.generalized_iou(a, far)[0, 0] < 0


@pytest.mark.parametrize("seed", range(8))
def test_hungarian_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_queries, n_objects = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    n_objects = min(n_objects, n_queries)
    cost = rng.normal(size=(n_queries, n_objects))
    assigned = detr.hungarian(cost)
    np.testing.assert_array_equal(assigned, detr.brute_force(cost))
    matched = assigned >= 0
    assert sorted(assigned[matched]) == list(range(n_objects))  # each object once


@pytest.mark.parametrize("seed, n_digits", [(0, 3), (1, 2), (5, 4)])
def test_the_scene_matches_every_object_and_leaves_no_object(seed, n_digits):
    found = detr.scene(seed, n_digits)
    assert found.probs.shape == (detr.QUERIES, 11)
    np.testing.assert_allclose(found.probs.sum(1), 1)
    np.testing.assert_array_equal(found.assigned, detr.brute_force(found.costs.total))
    assert (found.assigned >= 0).sum() == n_digits and (found.assigned < 0).sum() == detr.QUERIES - n_digits
    costs = found.costs
    np.testing.assert_allclose(costs.total, costs.class_term + costs.l1_term + costs.giou_term)
    assert found.total_cost() == pytest.approx(
        costs.total[found.assigned >= 0, found.assigned[found.assigned >= 0]].sum()
    )
    # the target boxes frame the digits' 8 x 8 pixels on the canvas
    for box in detr.to_corners(found.targets) * 32:
        x0, y0, x1, y1 = np.round(box).astype(int)
        assert found.canvas[y0:y1, x0:x1].sum() > 0 and x1 - x0 == 8
    spec = json.loads(detr_figure(found).to_json())
    text = json.dumps(spec)
    assert "no object" in text and "least total cost" in text


def test_detr_weights_are_the_papers():
    assert (detr.CLASS_WEIGHT, detr.L1_WEIGHT, detr.GIOU_WEIGHT) == (1.0, 5.0, 2.0)
    probs = np.full((1, 11), 0.0)
    probs[0, 4] = 1.0
    box = np.array([[0.5, 0.5, 0.2, 0.2]])
    costs = detr.matching_costs(probs, box, np.array([4]), box)
    assert costs.total[0, 0] == pytest.approx(-1 - 2)  # certain, exact box: -p - 2 GIoU with GIoU 1
