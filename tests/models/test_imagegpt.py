"""The pixel model: tokens, baselines by formula, sampling, completion, training, the shipped model."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from txviz import models
from txviz.generation.sampling import SamplingSettings
from txviz.imagegpt import data, drawing

rng = np.random.default_rng(0)


@pytest.fixture(scope="module")
def imagegpt():
    return models.load("digits-imagegpt", "cpu")


def test_sequences_put_the_class_first() -> None:
    images = rng.integers(0, 17, (3, 8, 8))
    seqs = data.sequences(images, np.array([7, 0, 9]))
    assert seqs.shape == (3, 65) and seqs[:, 0].tolist() == [24, 17, 26]
    assert (seqs[:, 1:] == images.reshape(3, 64)).all()
    assert (data.sequences(images, None)[:, 0] == data.NO_CLASS).all()
    with pytest.raises(ValueError):
        data.sequences(images + 17, None)
    with pytest.raises(data.ImageInputError):
        data.first_token(10)


def test_baselines_match_their_formulas() -> None:
    train = np.zeros((4, 8, 8), dtype=int)
    train[:2] = 16  # two white, two black training images
    test = np.zeros((1, 8, 8), dtype=int)
    # Marginal: P(0 | position) = (2 + 1) / (4 + 17) at every position, add-one smoothed.
    assert data.marginal_bits(train, test) == pytest.approx(-math.log2(3 / 21))
    # Bigram: after a 0 comes a 0 in 2 * 63 pairs of 126 seen from a 0; the first pixel from its marginal.
    follow = (2 * 63 + 1) / (2 * 63 + 17)
    expected = (-math.log2(3 / 21) - 63 * math.log2(follow)) / 64
    assert data.bigram_bits(train, test) == pytest.approx(expected)


def test_draw_records_every_head_on_earlier_pixels(imagegpt) -> None:
    steps = list(drawing.draw(imagegpt, 3, SamplingSettings(temperature=1.0, top_k=5, seed=1)))
    assert [s.index for s in steps] == list(range(64))
    for step in (steps[0], steps[20], steps[63]):
        assert step.attention.shape == (4, 4, 1 + step.index)
        np.testing.assert_allclose(step.attention.sum(-1), 1.0, atol=1e-5)
        assert step.before.sum() == pytest.approx(1.0, abs=1e-5)
        assert (step.after > 0).sum() <= 5  # top-k 5
        assert step.after[step.level] > 0
    assert (steps[-1].pixels >= 0).all() and (steps[10].pixels.ravel()[11:] == -1).all()
    again = list(drawing.draw(imagegpt, 3, SamplingSettings(temperature=1.0, top_k=5, seed=1)))
    assert np.array_equal(again[-1].pixels, steps[-1].pixels)  # a seed draws the same image


def test_top_k_one_is_greedy(imagegpt) -> None:
    greedy = drawing.sample(imagegpt, [5, None], SamplingSettings(temperature=0.0))
    top1 = drawing.sample(imagegpt, [5, None], SamplingSettings(temperature=1.5, top_k=1, seed=3))
    assert np.array_equal(greedy, top1)


def test_completion_keeps_the_top_half(imagegpt) -> None:
    _, x_test, _, y_test = data.split()
    image = x_test[0].astype(int)
    samples = drawing.complete(imagegpt, image, None, 3, SamplingSettings(temperature=1.0, seed=0))
    assert samples.shape == (3, 8, 8)
    assert (samples[:, :4] == image[:4]).all()
    assert samples.min() >= 0 and samples.max() <= 16
    assert len({s.tobytes() for s in samples}) > 1  # three different lower halves


def test_shipped_model_reproduces_its_numbers(imagegpt) -> None:
    meta = imagegpt.meta
    x_train, x_test, _, y_test = data.split()
    tokens = torch.as_tensor(data.sequences(x_test, None))
    assert drawing.bits_per_pixel(imagegpt, tokens) == pytest.approx(meta["heldout_bits_per_pixel"], abs=2e-4)
    told = torch.as_tensor(data.sequences(x_test, y_test))
    assert drawing.bits_per_pixel(imagegpt, told) == pytest.approx(
        meta["heldout_bits_per_pixel_given_class"], abs=2e-4
    )
    assert data.marginal_bits(x_train, x_test) == pytest.approx(
        meta["baseline_marginal_bits_per_pixel"], abs=1e-4
    )
    assert data.bigram_bits(x_train, x_test) == pytest.approx(
        meta["baseline_previous_pixel_bits_per_pixel"], abs=1e-4
    )
    # The claim the page makes: better than both baselines.
    assert meta["heldout_bits_per_pixel"] < meta["baseline_previous_pixel_bits_per_pixel"]
    assert meta["heldout_bits_per_pixel"] < meta["baseline_marginal_bits_per_pixel"]


def test_the_image_model_is_its_own_kind(imagegpt) -> None:
    assert imagegpt.kind == "image-decoder" and imagegpt.tokenizer is None
    assert imagegpt.n_layers == 4 and imagegpt.n_heads == 4
    assert "digits-imagegpt" not in models.names(("encoder", "decoder"))  # text pages never offer it
    assert "digits-imagegpt" in models.names(("image-decoder",))


def test_training_on_a_tiny_budget_learns(tmp_path) -> None:
    from txviz.training import imagegpt

    assert imagegpt.main(["--steps", "50", "--vit-samples", "0", "--out", str(tmp_path)]) == 0
    meta = json.loads((tmp_path / "txviz.json").read_text())
    curve = [point["bits_per_pixel"] for point in meta["train_curve"]]
    assert curve[-1] < curve[0] - 0.2
    assert meta["heldout_bits_per_pixel"] < math.log2(17)  # better than a uniform guess
    assert (tmp_path / "model.safetensors").exists()


def drawing_of_a_one(size: int = 64, ink: str = "black", paper: str = "white") -> Image.Image:
    image = Image.new("RGB", (size, size), paper)
    ImageDraw.Draw(image).line([(size // 2, 6), (size // 2, size - 6)], fill=ink, width=size // 8)
    return image


def test_uploads_are_reduced_to_the_grid() -> None:
    grid, notes = data.image_to_grid(drawing_of_a_one())
    assert grid.shape == (8, 8) and grid.min() == 0 and grid.max() == 16
    assert grid[:, 3:5].mean() > 8 > grid[:, :2].mean()  # the stroke is light after inverting
    assert "inverted" in data.describe(notes)
    light, notes = data.image_to_grid(drawing_of_a_one(ink="white", paper="black"))
    assert np.array_equal(light, grid) and "inverted" not in data.describe(notes)
    with pytest.raises(data.ImageInputError, match="blank"):
        data.image_to_grid(Image.new("RGB", (40, 40), "white"))
