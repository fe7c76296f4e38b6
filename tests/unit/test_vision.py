"""Vision transformer: image loading, patch geometry, attention maths, the shipped tiny ViT."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image
from upload_images import bomb_png, encode, photo

from txviz.vision import figures
from txviz.vision.images import MIN_SIDE, load_image
from txviz.vision.patches import PatchGrid, patch_grid, threshold_mask
from txviz.vision.runs import trace_image
from txviz.vision.samples import sample_image, sample_names
from txviz.vision.stats import (
    attention_entropy,
    attention_rollout,
    cls_attention,
    mean_attention_distance,
    patch_attention,
)


def plotted(values) -> np.ndarray:
    """A figure's data array, whether plotly wrote it as a list or as base64 typed data."""
    if isinstance(values, dict):
        flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        shape = [int(n) for n in str(values.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return np.array(values, dtype=float)


def test_plain_png_jpeg_webp_load_as_rgb():
    for fmt in ("PNG", "JPEG", "WEBP"):
        loaded = load_image(encode(photo(), fmt))
        assert loaded.image.mode == "RGB" and loaded.image.size == (40, 30)
        assert loaded.source_format == fmt and loaded.notes == ()


def test_png_pixels_survive_loading_exactly():
    original = photo()
    loaded = load_image(encode(original, "PNG"))
    assert np.array_equal(np.asarray(loaded.image), np.asarray(original))


def test_text_file_named_png_is_refused_clearly():
    with pytest.raises(ValueError, match="not an image"):
        load_image(b"hello, this is a text file pretending to be a .png\n" * 20)


def test_empty_file_is_refused_clearly():
    with pytest.raises(ValueError, match="empty"):
        load_image(b"")


def test_truncated_jpeg_is_refused_clearly():
    data = encode(photo(size=(200, 200)), "JPEG", quality=95)
    with pytest.raises(ValueError, match="JPEG file is truncated or damaged") as error:
        load_image(data[: len(data) // 2])
    assert "(image file is truncated" in str(error.value)  # the decoder's own words are kept


def test_decompression_bomb_is_refused_before_decoding():
    data = bomb_png(20_000)
    assert len(data) < 200_000  # small on disk: that is what makes it a bomb
    with pytest.raises(ValueError, match=r"400,000,000 pixels.*not decoded"):
        load_image(data)


def test_image_over_our_limit_but_under_pillows_is_refused_with_its_size():
    with pytest.raises(ValueError, match=r"8,000 x 8,000 pixels .*64 megapixels.*not decoded"):
        load_image(bomb_png(8_000))


def test_grayscale_is_copied_to_three_channels():
    grey = photo("L")
    loaded = load_image(encode(grey, "PNG"))
    rgb = np.asarray(loaded.image)
    assert loaded.source_mode == "L" and "Grayscale" in loaded.notes[0]
    for channel in range(3):
        assert np.array_equal(rgb[..., channel], np.asarray(grey))


def test_rgba_is_put_on_white():
    rgba = Image.new("RGBA", (10, 10), (255, 0, 0, 0))  # fully transparent red
    rgba.putpixel((3, 4), (0, 0, 255, 255))  # one opaque blue pixel
    loaded = load_image(encode(rgba, "PNG"))
    rgb = np.asarray(loaded.image)
    assert tuple(rgb[4, 3]) == (0, 0, 255)
    assert tuple(rgb[0, 0]) == (255, 255, 255)
    assert "white" in loaded.notes[0]


def test_cmyk_jpeg_is_converted():
    cmyk = Image.new("CMYK", (16, 16), (0, 255, 255, 0))  # pure red in CMYK
    loaded = load_image(encode(cmyk, "JPEG", quality=100))
    r, g, b = np.asarray(loaded.image)[8, 8].astype(int)
    assert loaded.source_mode == "CMYK" and "CMYK" in loaded.notes[0]
    assert r > 200 and g < 60 and b < 60


def test_sixteen_bit_png_is_scaled_not_clipped():
    ramp = np.linspace(0, 65535, 16 * 16).reshape(16, 16).astype(np.uint16)
    loaded = load_image(encode(Image.fromarray(ramp), "PNG"))
    grey = np.asarray(loaded.image)[..., 0]
    assert loaded.source_mode.startswith("I")
    assert grey[0, 0] == 0 and grey[-1, -1] == 255
    assert np.array_equal(grey, np.round(ramp / 65535 * 255).astype(np.uint8))


def test_animated_gif_uses_first_frame():
    frames = [Image.new("RGB", (12, 12), c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:], duration=50)
    loaded = load_image(buffer.getvalue())
    assert "3 frames" in loaded.notes[0]
    assert tuple(np.asarray(loaded.image)[5, 5]) == (255, 0, 0)


def test_one_pixel_image_is_refused_clearly():
    with pytest.raises(ValueError, match=r"only 1 x 1 pixels"):
        load_image(encode(Image.new("RGB", (1, 1)), "PNG"))


def test_bmp_is_not_accepted():
    with pytest.raises(ValueError, match="BMP images are not accepted"):
        load_image(encode(photo(), "BMP"))


def test_patch_index_round_trips():
    grid = PatchGrid(24, 40, 4, 8)  # 6 rows x 5 columns, not square
    assert (grid.rows, grid.cols, grid.n_patches) == (6, 5, 30)
    for k in range(grid.n_patches):
        row, col = grid.position(k)
        assert (row, col) == (k // grid.cols, k % grid.cols)
        assert grid.index(row, col) == k
    with pytest.raises(IndexError):
        grid.position(30)


def test_to_grid_drops_prefix_tokens():
    grid = PatchGrid(8, 12, 4, 4, ("[CLS]", "[DIST]"))  # 2 x 3 patches after 2 prefix tokens
    tokens = np.arange(grid.n_tokens)  # 0, 1 are prefix; 2.. are patches
    assert np.array_equal(grid.to_grid(tokens), [[2, 3, 4], [5, 6, 7]])
    assert grid.token_labels()[:3] == ("[CLS]", "[DIST]", "p0")
    with pytest.raises(ValueError):
        grid.to_grid(np.arange(7))


def test_grid_comes_from_the_config_with_distillation_and_register_tokens():
    from transformers import DeiTConfig, Dinov2WithRegistersConfig, ViTConfig

    vit = patch_grid(ViTConfig(image_size=24, patch_size=4))
    assert (vit.rows, vit.cols, vit.prefix_tokens) == (6, 6, ("[CLS]",))
    deit = patch_grid(DeiTConfig(image_size=224, patch_size=16))
    assert (deit.rows, deit.n_prefix) == (14, 2)
    dino = patch_grid(
        Dinov2WithRegistersConfig(image_size=518, patch_size=14, num_register_tokens=4),
        pixel_shape=(224, 224),
    )
    assert (dino.rows, dino.cols) == (16, 16)
    assert dino.prefix_tokens == ("[CLS]", "[REG0]", "[REG1]", "[REG2]", "[REG3]")
    with pytest.raises(ValueError):
        patch_grid(ViTConfig(image_size=24, patch_size=4), n_tokens=30)


def test_upsample_puts_each_value_on_its_patch():
    grid = PatchGrid(6, 9, 3, 3)  # 2 x 3
    full = grid.upsample(np.arange(6.0).reshape(2, 3))
    assert full.shape == (6, 9)
    assert full[4, 7] == 5 and full[0, 0] == 0 and full[2, 3] == 1


def test_patch_centres_in_pixels():
    grid = PatchGrid(8, 8, 4, 4)
    assert np.array_equal(grid.patch_centres(), [[2, 2], [2, 6], [6, 2], [6, 6]])


def random_attention(layers=3, heads=2, tokens=10, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(layers, heads, tokens, tokens))
    weights = np.exp(scores)
    return (weights / weights.sum(-1, keepdims=True)).astype(np.float32)


def test_cls_and_patch_attention_pick_the_right_rows():
    grid = PatchGrid(6, 6, 2, 2)  # 3 x 3 patches + [CLS] = 10 tokens
    weights = random_attention()
    assert np.allclose(cls_attention(weights, grid, 1, 0), weights[1, 0, 0, 1:].reshape(3, 3))
    mean = cls_attention(weights, grid, 2, None)
    assert np.allclose(mean, weights[2, :, 0, 1:].mean(0).reshape(3, 3))
    from_patch = patch_attention(weights, grid, 0, 1, patch=4)
    assert np.allclose(from_patch, weights[0, 1, 5, 1:].reshape(3, 3))


def test_rollout_rows_sum_to_one_and_match_the_formula():
    weights = random_attention()
    rollout = attention_rollout(weights)
    assert rollout.shape == (3, 10, 10)
    assert np.allclose(rollout.sum(-1), 1.0)
    a = [0.5 * w.mean(0) + 0.5 * np.eye(10) for w in weights.astype(np.float64)]
    assert np.allclose(rollout[-1], a[2] @ a[1] @ a[0])
    assert np.allclose(attention_rollout(weights, residual=False)[0], weights[0].mean(0))


def test_entropy_of_uniform_and_one_hot_rows():
    uniform = np.full((1, 1, 8, 8), 1 / 8)
    assert np.allclose(attention_entropy(uniform), np.log(8))  # nats, as the Attention Explorer
    one_hot = np.tile(np.eye(8), (1, 1, 1, 1))
    assert np.allclose(attention_entropy(one_hot), 0.0)


def test_mean_attention_distance_in_pixels():
    grid = PatchGrid(8, 8, 4, 4)  # 2 x 2 patches, centres 4 px apart
    self_only = np.zeros((1, 1, 5, 5))
    self_only[0, 0, np.arange(5), np.arange(5)] = 1.0
    assert np.allclose(mean_attention_distance(self_only, grid), 0.0)
    right = np.zeros((1, 1, 5, 5))
    right[0, 0, 0, 0] = 1.0  # [CLS] rows do not count
    for q, k in ((1, 2), (2, 1), (3, 4), (4, 3)):  # each patch looks at its horizontal neighbour
        right[0, 0, q, 0], right[0, 0, q, k] = 0.5, 0.5  # [CLS] weight is renormalised away
    assert np.allclose(mean_attention_distance(right, grid), 4.0)


def test_one_hot_attention_lights_exactly_one_patch():
    grid = PatchGrid(12, 12, 4, 4)
    values = np.zeros((3, 3))
    values[1, 2] = 1.0
    image = np.zeros((12, 12, 3), dtype=np.uint8)
    for threshold in (0.0, 0.5):
        fig = figures.attention_overlay_figure(image, values, grid, 0.5, threshold)
        z = plotted(fig.to_dict()["data"][1]["z"])
        lit = np.argwhere(~np.isnan(z))
        assert lit.tolist() == [[1, 2]]
    assert np.count_nonzero(grid.upsample(values)) == 16  # one 4 x 4 patch of pixels


def test_threshold_hides_weak_patches():
    shown = threshold_mask(np.array([[0.1, 0.4], [0.2, 0.8]]), 0.3)  # keep >= 0.24
    assert np.isnan(shown).tolist() == [[True, False], [True, False]]


def test_figures_carry_the_grid_sequence_and_probabilities():
    grid = PatchGrid(8, 12, 4, 4)  # 2 x 3
    image = (np.arange(8 * 12 * 3) % 256).astype(np.uint8).reshape(8, 12, 3)
    sequence = figures.patch_sequence_figure(image, grid).to_dict()
    assert list(sequence["layout"]["xaxis"]["ticktext"]) == ["[CLS]", "0", "1", "2", "3", "4", "5"]
    tiles = figures.patch_tiles(image, grid)
    assert np.array_equal(tiles[4], image[4:8, 4:8])  # patch 4 = row 1, column 1
    grid_fig = figures.patch_grid_figure(image, grid).to_dict()
    assert len(grid_fig["layout"]["shapes"]) == (2 + 1) + (3 + 1)
    bars = figures.probability_bars_figure(["a", "b", "c"], np.array([0.2, 0.7, 0.1]))
    assert list(bars.to_dict()["layout"]["yaxis"]["ticktext"]) == ["b", "a", "c"]
    stats = figures.head_statistics_figure(np.ones((2, 3)), np.full((2, 3), 5.0))
    traces = stats.to_dict()["data"]
    assert len(traces) == 2 * 3  # one trace per head in each panel
    assert traces[0]["marker"]["color"] == traces[1]["marker"]["color"]  # head 0, both panels
    assert traces[0]["marker"]["color"] != traces[2]["marker"]["color"]


def test_sample_images_all_open():
    for name in sample_names():
        image = sample_image(name)
        assert image.mode == "RGB" and min(image.size) >= MIN_SIDE


def test_text_model_is_refused():
    from types import SimpleNamespace

    text_model = SimpleNamespace(name="minilm", kind="encoder", processor=None)
    with pytest.raises(ValueError, match="reads text"):
        trace_image(text_model, Image.new("RGB", (24, 24)))


def test_long_sequences_wrap_like_text():
    grid = PatchGrid(16, 16, 2, 2)  # 8 x 8 = 64 patches + [CLS] = 65 tokens
    image = np.random.default_rng(1).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    fig = figures.patch_sequence_figure(image, grid, per_line=50)
    strip = plotted(fig.to_dict()["data"][0]["z"]).astype(np.uint8)
    assert strip.shape[0] == 2 * (2 + 2)  # two lines of 2 px tiles with 1 px gaps above and below
    # slot 50 is patch 49 (row 6, column 1): first tile of the second line
    assert np.array_equal(strip[4:6, 0:2], image[12:14, 2:4])
    assert "wrapped every 50" in fig.layout.title.text
