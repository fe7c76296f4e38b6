"""DETR's set prediction (Carion et al. 2020): N object queries, one (class, box) each, matched one to one
to the ground-truth objects by the Hungarian algorithm; the queries left over predict "no object".

The matching cost of query q and object t is DETR's: -w_class p_q(c_t) + w_L1 |b_q - b_t|_1
- w_giou GIoU(b_q, b_t), with DETR's weights 1, 5 and 2, boxes as (cx, cy, w, h) in [0, 1]. The image is a
canvas of scikit-learn digits (the captioning page's); no DETR is trained in txviz, so the predictions
are the ground truth plus seeded noise and distractor queries that mostly say "no object".
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from txviz.captioning.canvas import DIGIT, SIZE, WORDS, make_canvases

CLASS_WEIGHT, L1_WEIGHT, GIOU_WEIGHT = 1.0, 5.0, 2.0  # DETR's matcher
NO_OBJECT = len(WORDS)  # class 10, the empty set
CLASSES = (*WORDS, "no object")
QUERIES = 6
BOX_NOISE = 0.04  # standard deviation of the predicted boxes' (cx, cy, w, h), in canvas widths


def to_corners(boxes: np.ndarray) -> np.ndarray:
    """(..., 4) boxes (cx, cy, w, h) -> (x0, y0, x1, y1)."""
    cx, cy, w, h = np.moveaxis(boxes, -1, 0)
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=-1)


def generalized_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise GIoU of (n, 4) and (m, 4) corner boxes: IoU - (|C| - |A u B|) / |C|, C the enclosing box."""
    a, b = a[:, None], b[None]
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    inter_w = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    inter_h = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = inter_w * inter_h
    union = area_a + area_b - inter
    hull = (np.maximum(a[..., 2], b[..., 2]) - np.minimum(a[..., 0], b[..., 0])) * (
        np.maximum(a[..., 3], b[..., 3]) - np.minimum(a[..., 1], b[..., 1])
    )
    return inter / union - (hull - union) / hull


@dataclass(frozen=True)
class Costs:
    """The matching cost (queries x objects) and its three weighted terms."""

    total: np.ndarray
    class_term: np.ndarray  # -w_class p_q(c_t)
    l1_term: np.ndarray  # w_L1 |b_q - b_t|_1
    giou_term: np.ndarray  # -w_giou GIoU


def matching_costs(probs: np.ndarray, boxes: np.ndarray, labels: np.ndarray, targets: np.ndarray) -> Costs:
    """DETR's cost of matching each query (probs (N, 11), boxes (N, 4)) to each object (labels, boxes)."""
    class_term = -CLASS_WEIGHT * probs[:, labels]
    l1_term = L1_WEIGHT * np.abs(boxes[:, None] - targets[None]).sum(-1)
    giou_term = -GIOU_WEIGHT * generalized_iou(to_corners(boxes), to_corners(targets))
    return Costs(class_term + l1_term + giou_term, class_term, l1_term, giou_term)


def hungarian(cost: np.ndarray) -> np.ndarray:
    """The object each query is matched to (-1 for "no object"), at the least total cost."""
    rows, cols = linear_sum_assignment(cost)
    assigned = np.full(cost.shape[0], -1)
    assigned[rows] = cols
    return assigned


def brute_force(cost: np.ndarray) -> np.ndarray:
    """The same by trying every injective map of objects to queries: for checking, small N only."""
    n_queries, n_objects = cost.shape
    best = min(
        itertools.permutations(range(n_queries), n_objects),
        key=lambda queries: cost[list(queries), range(n_objects)].sum(),
    )
    assigned = np.full(n_queries, -1)
    assigned[list(best)] = range(n_objects)
    return assigned


@dataclass(frozen=True)
class Scene:
    """A digits canvas, its objects, the queries' predictions and the matching."""

    canvas: np.ndarray  # (32, 32) grey levels 0..16
    labels: np.ndarray  # (M,) digit of each object
    targets: np.ndarray  # (M, 4) boxes (cx, cy, w, h) in [0, 1]
    probs: np.ndarray  # (N, 11) each query's class probabilities, the last "no object"
    boxes: np.ndarray  # (N, 4)
    costs: Costs
    assigned: np.ndarray  # (N,) the object of each query, -1 for "no object"

    def predicted(self, query: int) -> int:
        """The class a query's own probabilities favour."""
        return int(self.probs[query].argmax())

    def total_cost(self) -> float:
        matched = self.assigned >= 0
        return float(self.costs.total[matched, self.assigned[matched]].sum())


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def scene(seed: int = 0, n_digits: int = 3, n_queries: int = QUERIES) -> Scene:
    """A canvas of n_digits digits and n_queries noisy predictions, matched as DETR's loss matches them."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    canvases = make_canvases(digits.images, digits.target, 1, seed, n_digits)
    labels = canvases.captions[0][:n_digits]
    corners = canvases.corners[0][:n_digits].astype(float)  # (top, left) in pixels
    side = DIGIT / SIZE
    targets = np.stack(
        [
            (corners[:, 1] + DIGIT / 2) / SIZE,
            (corners[:, 0] + DIGIT / 2) / SIZE,
            *[np.full(n_digits, side)] * 2,
        ],
        axis=1,
    )
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1, (n_queries, len(CLASSES)))
    boxes = np.empty((n_queries, 4))
    # the first queries find the objects, the rest are distractors; shuffled so that the order says nothing
    order = rng.permutation(n_queries)
    for slot, query in enumerate(order):
        if slot < n_digits:
            logits[query, labels[slot]] += 4.0
            boxes[query] = targets[slot] + rng.normal(0, BOX_NOISE, 4)
        else:
            logits[query, NO_OBJECT] += 4.0
            boxes[query, :2] = rng.uniform(0.15, 0.85, 2)
            boxes[query, 2:] = rng.uniform(0.15, 0.35, 2)
    boxes[:, 2:] = np.clip(boxes[:, 2:], 0.05, None)
    probs = _softmax(logits)
    costs = matching_costs(probs, boxes, labels, targets)
    return Scene(canvases.pixels[0], labels, targets, probs, boxes, costs, hungarian(costs.total))
