"""Long documents on a tiny model small enough to keep exact maps: every reduction against its definition."""

from __future__ import annotations

import weakref

import numpy as np
import pytest
import torch
from tiny_models import WORDS, byte_bpe, tiny_model
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import PreTrainedTokenizerFast

from txviz.core.errors import UserError
from txviz.core.tracing import trace_text
from txviz.longdoc import drill, overview, spans, view_model
from txviz.models import LoadedModel

RNG = np.random.default_rng(0)


def document(n_sentences: int, seed: int = 0) -> str:
    """Sentences of random words, a paragraph break every fourth sentence."""
    rng = np.random.default_rng(seed)
    parts = []
    for i in range(n_sentences):
        words = rng.choice(WORDS, size=int(rng.integers(3, 9)))
        parts.append(" ".join(words).capitalize() + "." + ("\n\n" if i % 4 == 3 else " "))
    return "".join(parts).strip()


def tokenizer() -> PreTrainedTokenizerFast:
    return byte_bpe([document(40, seed) for seed in range(3)], 300, bos_token="<s>", model_max_length=2048)


@pytest.fixture(scope="module")
def tiny() -> LoadedModel:
    tok = tokenizer()
    model = tiny_model("llama", len(tok), max_position_embeddings=2048)
    return LoadedModel("tiny", "decoder", model, tok, None, "cpu")


@pytest.fixture(scope="module")
def tiny_bert() -> LoadedModel:
    tok = tokenizer()
    model = tiny_model("bert", len(tok), max_position_embeddings=512)
    return LoadedModel("tiny-bert", "encoder", model, tok, None, "cpu")


TEXT = document(30)


def exact(loaded: LoadedModel, text: str = TEXT) -> np.ndarray:
    return trace_text(loaded, text, max_tokens=None).weights.astype(np.float64)  # [L, H, T, T]


@pytest.mark.parametrize("model", ["tiny", "tiny_bert"])
@pytest.mark.parametrize(("chunk", "layer"), [(5, None), (64, 0)])
def test_pooled_tiles_are_the_mean_and_max_of_the_exact_maps(request, model, chunk, layer, monkeypatch):
    loaded = request.getfixturevalue(model)
    monkeypatch.setattr(overview, "TILES", 13)  # ragged tiles at both edges
    view = overview.overview(loaded, TEXT, layer=layer, chunk=chunk)
    assert view.layer == (loaded.n_layers - 1 if layer is None else layer)
    weights = exact(loaded)[view.layer]
    n, t = weights.shape[-1], view.tile
    assert n > 100 and n % t != 0
    for i, rows in enumerate(range(0, n, t)):
        for j, cols in enumerate(range(0, n, t)):
            tile = weights[..., rows : rows + t, cols : cols + t]
            np.testing.assert_allclose(view.pooled_mean[..., i, j], tile.mean(axis=(-1, -2)), atol=1e-6)
            np.testing.assert_allclose(view.pooled_max[..., i, j], tile.max(axis=(-1, -2)), atol=1e-6)


@pytest.mark.parametrize("model", ["tiny", "tiny_bert"])
def test_head_summaries_equal_their_definitions(request, model):
    loaded = request.getfixturevalue(model)
    view = overview.overview(loaded, TEXT, chunk=16)
    w = exact(loaded)
    n = w.shape[-1]
    distance = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    entropy = -np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0).sum(-1)
    np.testing.assert_allclose(view.sink, w[..., : overview.SINK_TOKENS].sum(-1).mean(-1), atol=1e-5)
    np.testing.assert_allclose(view.distance, (w * distance).sum(-1).mean(-1), rtol=1e-5)
    np.testing.assert_allclose(view.entropy, entropy.mean(-1), rtol=1e-5)
    local = (w * (distance <= overview.LOCAL_WINDOW)).sum(-1).mean(-1)
    np.testing.assert_allclose(view.local, local, atol=1e-5)
    seen_by = np.tril(np.ones((n, n))).sum(0) if view.causal else np.full(n, n)
    np.testing.assert_allclose(view.received, w[view.layer].sum(-2) / seen_by, rtol=1e-5, atol=1e-7)
    assert view.causal == (model == "tiny")


def test_sentence_and_paragraph_maps_equal_their_definitions(tiny):
    view = overview.overview(tiny, TEXT, layer=1, chunk=16)
    w = exact(tiny)[1]
    of = view.spans.of_token
    n_s = view.spans.n
    member = np.eye(n_s)[of]  # (T, S)
    expected = np.einsum("qs,hqk,kt->hst", member / member.sum(0), w, member)
    np.testing.assert_allclose(view.sentences, expected, atol=1e-6)
    assert n_s == 30  # every sentence of the document, none split or merged
    paragraphs = np.eye(len(view.spans.paragraph_labels))[view.spans.paragraph_of][of]  # (T, P)
    by_paragraph = np.einsum("qp,hqk,kr->hpr", paragraphs / paragraphs.sum(0), w, paragraphs)
    np.testing.assert_allclose(spans.to_paragraphs(view.sentences, view.spans), by_paragraph, atol=1e-6)
    assert len(view.spans.paragraph_labels) == 8


def test_a_layer_outside_the_model_is_refused_and_views_keep_to_their_layer(tiny):
    with pytest.raises(UserError, match="no layer 9"):
        overview.overview(tiny, TEXT, layer=9)
    view = overview.overview(tiny, TEXT, layer=0)
    with pytest.raises(ValueError, match="layer 0"):
        view_model.pooled(view, 1, None)


def test_sentences_follow_the_text():
    text = "First one. Second one!\n\nThird"
    offsets = [(0, 5), (5, 9), (9, 10), (10, 17), (17, 21), (21, 22), (24, 29)]
    found = spans.spans(text, offsets)
    assert found.of_token.tolist() == [0, 0, 0, 1, 1, 1, 2]
    assert found.paragraph_of.tolist() == [0, 0, 1]
    assert found.labels == ("0 · First one.", "1 · Second one!", "2 · Third")
    assert found.tokens_of(1) == (3, 6)


def test_many_sentences_are_merged_in_runs(monkeypatch):
    monkeypatch.setattr(spans, "MAX_SPANS", 4)
    text = " ".join(f"S{i}." for i in range(10))
    offsets = [(4 * i, 4 * i + 3) for i in range(10)]
    assert spans.spans(text, offsets).of_token.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]


def test_drill_down_rows_equal_the_full_traces_rows(tiny):
    w = exact(tiny)
    rows = drill.drill_down(tiny, TEXT, 4096, 1, 40, 77)
    assert rows.weights.shape == (w.shape[1], 37, w.shape[-1])
    np.testing.assert_allclose(rows.weights, w[1, :, 40:77], atol=1e-6)


def test_a_region_outside_the_text_is_refused_and_a_long_one_cut(tiny):
    n = len(tiny.tokenizer(TEXT)["input_ids"])
    for start, stop in ((n, n + 5), (-3, 4), (10, 10), (5, n + 1)):
        with pytest.raises(drill.RegionError, match="outside this text"):
            drill.drill_down(tiny, TEXT, 4096, 0, start, stop)
    rows = drill.drill_down(tiny, TEXT, 4096, 0, 0, n)
    assert rows.stop == drill.MAX_ROWS and "64 queries" in rows.notice


def test_bad_documents(tiny):
    with pytest.raises(UserError, match="empty"):
        overview.overview(tiny, "   \n ")
    view = overview.overview(tiny, document(200), max_tokens=128)
    assert view.n_tokens == 128 and "only the first 128" in view.notice


def test_short_models_keep_their_own_limit(tiny_bert):
    assert overview.lengths(tiny_bert) == [512]
    assert overview.input_limit(tiny_bert, 4096) == 512


class LargestTensors(TorchDispatchMode):
    """Every tensor an operation makes: the largest one, and the most bytes alive at once among
    those at least ``floor`` elements (views share their base's memory and are not counted)."""

    def __init__(self, floor: int):
        super().__init__()
        self.floor, self.largest, self.live, self.peak = floor, 0, 0, 0

    def _gone(self, size: int) -> None:
        self.live -= size

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, torch.Tensor) and t._base is None and t.numel() >= self.floor:
                if getattr(t, "_probe_counted", False):
                    continue  # an in-place operation returned its input
                t._probe_counted = True
                self.largest = max(self.largest, t.numel())
                self.live += t.numel()
                self.peak = max(self.peak, self.live)
                weakref.finalize(t, self._gone, t.numel())
        return out


def test_the_overview_never_holds_one_layers_maps(tiny):
    text = document(150)
    n = len(tiny.tokenizer(text)["input_ids"])
    heads, layer_maps = tiny.n_heads, tiny.n_heads * n * n
    with LargestTensors(floor=n) as probe:
        view = overview.overview(tiny, text, chunk=32)
    assert view.n_tokens == n > 1500
    block = heads * 32 * n  # one block of queries
    kept = sum(a.size for a in (view.pooled_mean, view.pooled_max, view.sentences, view.received))
    one_hot = n * view.spans.n  # each key's sentence, for one product per block
    band = heads * (n + 64) * (64 + overview.LOCAL_WINDOW)  # local weight: block x (block + window) tiles
    assert probe.largest <= max(block, view.pooled_mean.size, one_hot, band) < layer_maps / 8
    with LargestTensors(floor=n) as plain:  # the model's own forward, nothing recorded
        tiny.model(**overview.model_inputs(tiny, tiny.tokenizer(text)["input_ids"]), logits_to_keep=1)
    # alive at once beyond the plain forward: the fixed-size maps (and their stacked copy), a few
    # blocks' temporaries and the band of local weights
    assert probe.peak - plain.peak <= 2 * kept + 8 * block + band < layer_maps / 2
    with LargestTensors(floor=n) as full:  # the probe sees whole maps where they exist
        trace_text(tiny, text, max_tokens=None)
    assert full.largest >= layer_maps and full.peak >= tiny.n_layers * layer_maps


def test_context_brackets_the_token():
    text = "The quick brown fox jumps."
    offsets = [(0, 0), (0, 3), (3, 9), (9, 15), (15, 19), (19, 25), (25, 26)]
    tokens = ("<s>", "The", "quick", "brown", "fox", "jumps", ".")
    assert drill.context(text, offsets, tokens, 3, around=1) == "quick [brown] fox"
    assert drill.context(text, offsets, tokens, 0) == "[<s>]"


def test_sink_names_keep_apart_over_the_last_keys():
    """The last keys are seen by few queries, so several of the largest sit side by side: their names
    go in lanes, no two boxes overlapping and every box inside the plot."""
    import html

    from txviz.figures.axes import PAGE_WIDTH, label_width, plot_length
    from txviz.longdoc import figures as longdoc_figures

    n = 400
    received = np.full(n, 0.002)
    received[0] = 0.4
    received[-4:] = [0.41, 0.42, 0.43, 0.44]
    tokens = [f"w{i}" for i in range(n - 4)] + ["because", "tired", ".", "</s>"]
    figure = longdoc_figures.sinks_figure(received, tokens, top=5)
    layout = figure.to_dict()["layout"]
    width, height = plot_length(PAGE_WIDTH), layout["height"] - 60 - 50
    x0, x1 = layout["xaxis"].get("range", [0, n - 1])
    y0, y1 = layout["yaxis"].get("range", [np.log10(0.002), np.log10(0.44)])
    boxes = []
    for note in layout["annotations"]:
        x = (note["x"] - x0) / (x1 - x0) * width + note.get("ax", -10)
        if note.get("ayref") == "y":
            y = (note["ay"] - y0) / (y1 - y0) * height
        else:  # pixels from the point, downward positive
            y = (note["y"] - y0) / (y1 - y0) * height - note.get("ay", -30)
        half = label_width(html.unescape(note["text"])) / 2
        boxes.append((x - half, x + half, y - 8, y + 8))
    assert len(boxes) == 5
    for left, right, _, _ in boxes:
        assert left >= 0 and right <= width
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2]
            assert apart, (a, b)
