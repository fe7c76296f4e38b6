"""ViT-Base's input as the books draw it: 196 patches of 16 x 16 px, each 768 values, checked against
an independent loop over the photograph's pixels; z0 against its formula; the book's transfer facts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from txviz.positional.encodings import sinusoidal_encoding
from txviz.vision import book


def test_the_photo_is_224_px_and_cuts_into_196_patches_of_768_values():
    image = book.square_photo("china.jpg")
    assert image.shape == (224, 224, 3) and image.dtype == np.uint8
    flat = book.flatten_patches(image)
    assert flat.shape == (196, 768) == ((224 // 16) ** 2, 16 * 16 * 3)
    for index in range(196):  # an independent reading: patch r, c is the 16 x 16 block at (16 r, 16 c)
        row, col = divmod(index, 14)
        block = image[16 * row : 16 * row + 16, 16 * col : 16 * col + 16]
        expected = [block[y, x, c] for y in range(16) for x in range(16) for c in range(3)]
        np.testing.assert_array_equal(flat[index], expected)


def test_unflattening_gives_back_the_photograph_exactly():
    image = book.square_photo("flower.jpg")
    flat = book.flatten_patches(image)
    np.testing.assert_array_equal(book.unflatten_patches(flat, 14, 14), image)
    odd = np.arange(5 * 7 * 2).reshape(5, 7, 2)  # not square, not a multiple: the edge is dropped
    np.testing.assert_array_equal(book.unflatten_patches(book.flatten_patches(odd, 2), 2, 3, 2), odd[:4, :6])


def test_z0_is_class_token_then_projected_patches_plus_positions():
    image = book.square_photo()
    embedded = book.embed(image, d=64, seed=3)
    assert embedded.grid.n_patches == 196 and embedded.grid.n_tokens == 197
    assert embedded.grid.token_labels()[0] == "[CLASS]"
    pixels = book.flatten_patches(image) / 127.5 - 1  # ViT's processor: mean 0.5, std 0.5
    np.testing.assert_allclose(embedded.pixels, pixels)
    assert embedded.pixels.min() >= -1 and embedded.pixels.max() <= 1
    rng = np.random.default_rng(3)
    e = rng.normal(scale=1 / np.sqrt(768), size=(768, 64))
    x_class = rng.normal(scale=0.02, size=64)
    expected = np.vstack([x_class, pixels @ e]) + sinusoidal_encoding(197, 64)
    np.testing.assert_allclose(embedded.z0, expected, atol=1e-12)
    assert embedded.z0.shape == (197, 64)


def test_the_transfer_table_has_the_books_figures_and_its_source():
    rows = {d.name.split(" (")[0]: (d.classes, d.images) for d in book.TRANSFER}
    assert rows == {"ImageNet": ("1k", "1.3M"), "ImageNet-21k": ("21k", "14M"), "JFT-300M": ("18k", "303M")}
    text = " ".join(d.outcome for d in book.TRANSFER)
    assert "BiT" in text and "30 days" in text and "TPUv3" in text
    assert "Dosovitskiy et al. 2021" in book.SOURCE and "probml 15.5" in book.SOURCE


def test_the_table_is_the_papers_and_the_book_groups_21k_with_jft():
    # "ViT about matches BiT" at ImageNet-21k is the paper's Fig. 3; the book says ViT does better than
    # BiT after 21k or JFT. The table must not call the paper's row the book's.
    assert "book" not in book.TITLE.lower() and "Dosovitskiy" in book.TITLE
    assert "book's figures" not in book.SOURCE and "paper's figures" in book.SOURCE
    row = next(d for d in book.TRANSFER if d.name == "ImageNet-21k")
    assert "about matches BiT" in row.outcome and "paper" in row.outcome
    reading = book.BOOK_READING
    assert "ImageNet-21k" in reading and "JFT" in reading and "better than BiT" in reading
    page = (Path(__file__).parents[2] / "txviz" / "vision" / "views.py").read_text()
    assert "The book's transfer figures" not in page and "book.BOOK_READING" in page
    assert "the table beside them is the book's figures" not in page
