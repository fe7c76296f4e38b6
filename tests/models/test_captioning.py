"""Digit canvases and the two captioners: canvases, regions, one-hot hard attention, training, shipped scores."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from txviz.captioning import canvas, store
from txviz.captioning.evaluate import evaluate, held_out_canvases
from txviz.captioning.model import Captioner, CaptionerConfig, caption
from txviz.training.captioner import targets_of


@pytest.fixture(scope="module")
def shipped():
    return store.load()


def digits():
    x = np.arange(10 * 64, dtype=np.float32).reshape(10, 8, 8) % 17
    return x, np.arange(10)


def test_canvases_are_reproducible_and_in_reading_order() -> None:
    x, y = digits()
    a = canvas.make_canvases(x, y, 50, seed=3)
    b = canvas.make_canvases(x, y, 50, seed=3)
    assert np.array_equal(a.pixels, b.pixels) and np.array_equal(a.captions, b.captions)
    for i in range(50):
        n = int((a.captions[i] >= 0).sum())
        assert canvas.MIN_DIGITS <= n <= canvas.MAX_DIGITS
        corners = a.corners[i, :n]
        slots = (corners[:, 0] // canvas.SLOT) * 2 + corners[:, 1] // canvas.SLOT
        assert list(slots) == sorted(set(slots.tolist()))  # one per quadrant, in reading order
        for j, (top, left) in enumerate(corners):
            assert np.array_equal(a.pixels[i, top : top + 8, left : left + 8], x[a.captions[i, j]])
    assert a.words(0) == [canvas.WORDS[d] for d in a.captions[0] if d >= 0]
    with pytest.raises(canvas.CanvasError, match="more than the captioner was trained for"):
        canvas.make_canvases(x, y, 1, seed=0, n_digits=5)


def test_regions_are_the_patches_a_digit_overlaps() -> None:
    boxes = canvas.regions(np.array([[0, 0], [2, 2], [-1, -1]])).reshape(3, 8, 8)
    assert boxes[0].sum() == 4 and boxes[0, :2, :2].all()
    assert boxes[1].sum() == 9 and boxes[1, :3, :3].all()
    assert not boxes[2].any()


def test_targets_end_after_the_last_word() -> None:
    targets = targets_of(np.array([[3, 7, -1, -1], [1, 2, 3, 4]]))
    assert targets.tolist() == [[3, 7, canvas.END, -1, -1], [1, 2, 3, 4, canvas.END]]


def test_hard_attention_rows_are_one_hot_and_soft_rows_sum_to_one() -> None:
    x, y = digits()
    pixels = torch.as_tensor(canvas.make_canvases(x, y, 6, seed=0).pixels)
    torch.manual_seed(0)
    hard = caption(
        Captioner(CaptionerConfig(attention="hard")).eval(), pixels, True, torch.Generator().manual_seed(0)
    )
    assert hard.attention.shape == (6, canvas.MAX_STEPS, 64)
    assert ((hard.attention == 0) | (hard.attention == 1)).all() and (hard.attention.sum(-1) == 1).all()
    assert torch.equal(hard.attention.argmax(-1), hard.chosen)
    torch.testing.assert_close(hard.policy.sum(-1), torch.ones(6, canvas.MAX_STEPS))
    soft = caption(Captioner(CaptionerConfig(attention="soft")).eval(), pixels)
    torch.testing.assert_close(soft.attention.sum(-1), torch.ones(6, canvas.MAX_STEPS))
    assert torch.equal(soft.attention, soft.policy)


def test_training_on_a_tiny_budget_learns(tmp_path) -> None:
    from txviz.training import captioner

    assert captioner.main(["--steps", "100", "--heldout", "20", "--out", str(tmp_path)]) == 0
    meta = json.loads((tmp_path / "txviz.json").read_text())
    for method in ("soft", "hard"):
        curve = [point["word_loss"] for point in meta["runs"][method]["train_curve"]]
        assert curve[-1] < curve[0] - 0.1, method
    models, _ = store.load(tmp_path)
    assert set(models) == {"soft", "hard"}


def test_shipped_captioners_reproduce_their_numbers(shipped) -> None:
    models, meta = shipped
    test = held_out_canvases(meta["heldout"]["canvases"])[2]
    for method, model in models.items():
        scores = evaluate(model, test, seed=meta["seed"])
        for key in ("exact_caption_accuracy", "word_accuracy", "localisation"):
            assert scores[key] == pytest.approx(meta["runs"][method][key], abs=1e-4), (method, key)
    for method in ("soft", "hard"):  # the page's claims: far above chance (10%), attention on the digit named
        assert meta["runs"][method]["word_accuracy"] > 0.8 and meta["runs"][method]["localisation"] > 0.95


def marks(n: int, size: int = 320) -> Image.Image:
    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)
    for i in range(n):
        x, y = 20 + (i % 3) * 100, 20 + (i // 3) * 150
        draw.ellipse([x, y, x + 50, y + 80], outline="black", width=14)
    return image


def test_uploads_become_canvases_or_a_clear_message() -> None:
    pixels, notes = canvas.from_image(marks(2))
    assert pixels.shape == (32, 32) and pixels.max() == pytest.approx(16) and "inverted" in " ".join(notes)
    with pytest.raises(canvas.CanvasError, match="6 separate marks"):
        canvas.from_image(marks(6))
    with pytest.raises(canvas.CanvasError, match="blank"):
        canvas.from_image(Image.new("RGB", (50, 50), "black"))
