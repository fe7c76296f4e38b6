"""Attention figures: the data in fig.to_dict(), not pixels."""

import base64
import io

import numpy as np
from PIL import Image

from txviz.figures import attention as figures
from txviz.figures.text import plain


def test_heatmap_keeps_repeated_tokens_apart_and_labels_axes():
    tokens = ("the", "cat", "saw", "the", "dog")
    w = np.eye(5, dtype=np.float32)
    figure = figures.attention_heatmap(w, tokens, tokens, "t")
    data, trace = figure.to_dict(), figure.data[0]
    np.testing.assert_array_equal(trace.z, w)
    assert list(data["layout"]["yaxis"]["tickvals"]) == [0, 1, 2, 3, 4]
    assert list(data["layout"]["yaxis"]["ticktext"]) == list(tokens)
    assert data["layout"]["yaxis"]["title"]["text"].startswith("query")
    assert data["layout"]["xaxis"]["title"]["text"].startswith("key")
    assert trace.text[3][0] == "the → the"


def test_threshold_and_log_scale():
    w = np.array([[0.9, 0.1], [0.02, 0.98]], dtype=np.float32)
    z = figures.attention_heatmap(w, ("a", "b"), ("a", "b"), threshold=0.05).data[0].z
    assert z[1, 0] == 0.0 and z[0, 1] == np.float32(0.1)
    z = figures.attention_heatmap(w, ("a", "b"), ("a", "b"), log_scale=True).data[0].z
    np.testing.assert_allclose(z, np.log10(w), atol=1e-6)


def test_token_text_is_escaped_for_plotly():
    assert plain("<b>x</b> & <script>") == "&lt;b&gt;x&lt;/b&gt; &amp; &lt;script&gt;"
    data = figures.attention_heatmap(np.ones((1, 1)), ("<img src=x>",), ("<img src=x>",)).to_dict()
    assert data["layout"]["xaxis"]["ticktext"][0] == "&lt;img src=x&gt;"


def test_whole_model_mosaic_is_a_small_image_at_512_tokens():
    w = np.random.default_rng(0).random((30, 9, 512, 512)).astype(np.float32)
    figure = figures.heads_mosaic(w, tile_size=48)
    source = figure.data[0].source
    image = Image.open(io.BytesIO(base64.b64decode(source.split(",", 1)[1])))
    width, height = image.size  # 9 columns and 30 rows of square tiles, 2-pixel gaps
    tile = (width - 8 * 2) // 9
    assert tile <= 48 and width == 9 * tile + 8 * 2 and height == 30 * tile + 29 * 2
    assert len(figure.to_json()) < 10_000_000


def test_pool_averages_blocks():
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(figures.pool(m, 2), [[2.5, 4.5], [10.5, 12.5]])


def test_token_focus_draws_one_line_per_weight_above_the_floor():
    w = np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.1, 0.1, 0.8]])
    figure = figures.token_focus_arcs(w, ("a", "b", "c"), focus=0, min_weight=0.05)
    lines = [t for t in figure.data if t.mode == "lines"]
    segments = sum(list(t.x).count(None) for t in lines)
    assert segments == 2 + 3  # a -> a, b; and a <- a, b, c


def test_plain_escapes_exactly_ampersand_and_angle_brackets():
    """plain is html.escape without quotes: the three characters plotly's label markup needs."""
    hostile = "a & b <br> \"q\" 'q' line\nnext %{x} &amp; \t\u00e9\u4e2d\U0001f600"
    by_hand = hostile.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert plain(hostile) == by_hand
    assert "\n" in plain(hostile) and '"q"' in plain(hostile)  # newlines and quotes kept as they were
    assert plain(12) == "12"  # numbers are labels too


# MiniLM's tokens of the Attention Explorer's default sentence
DEFAULT_TOKENS = (
    "[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it", "was", "too",
    "tired", ".", "[SEP]",
)  # fmt: skip


def test_heatmap_labels_every_token_of_the_default_sentence_at_projector_size():
    """At 20 px labels (projector mode) the map grows so every query row keeps its label, and says nothing
    about thinning."""
    n = len(DEFAULT_TOKENS)
    for presenting in (False, True):
        figure = figures.attention_heatmap(
            np.eye(n), DEFAULT_TOKENS, DEFAULT_TOKENS, "t", presenting=presenting
        )
        layout = figure.to_dict()["layout"]
        assert list(layout["yaxis"]["ticktext"]) == list(DEFAULT_TOKENS), presenting
        assert list(layout["xaxis"]["ticktext"]) == list(DEFAULT_TOKENS), presenting
        assert not layout.get("annotations"), presenting


def test_heatmap_thins_a_long_text_and_says_so_on_the_figure():
    tokens = tuple(f"t{i}" for i in range(300))
    figure = figures.attention_heatmap(np.eye(300), tokens, tokens, "t", presenting=True)
    layout = figure.to_dict()["layout"]
    shown = list(layout["yaxis"]["tickvals"])
    step = shown[1] - shown[0]
    assert step > 1
    notes = [a["text"] for a in layout["annotations"]]
    assert len(notes) == 1 and "query label" in notes[0] and "hover names every token" in notes[0]
    assert f"every {step}" in notes[0] or (step == 2 and "every 2nd" in notes[0])
