"""The Head Atlas's builder on tiny models: every score and context against exact maps, brute force."""

from __future__ import annotations

import numpy as np
import pytest
from atlas_helpers import SMALL, brute, corpus, decoder, encoder

from txviz.atlas import build as builder
from txviz.atlas.atlas import CRITERIA, METRICS
from txviz.atlas.scan import TARGETS
from txviz.core import model_map
from txviz.core.errors import UserError


@pytest.fixture(scope="module")
def tiny():
    return decoder()


@pytest.fixture(scope="module")
def built(tiny):
    return builder.build(tiny, corpus(), SMALL)


@pytest.fixture(scope="module")
def expected(tiny, built):
    return brute(tiny, built.tokens, SMALL)


def check_scores(atlas, expected, names=None) -> None:
    for name in names or [m.name for m in METRICS]:
        np.testing.assert_allclose(
            atlas.scores[name], expected["scores"][name], rtol=1e-5, atol=1e-6, err_msg=name
        )


def check_contexts(atlas, expected, settings, criteria=CRITERIA) -> None:
    """Top k: exactly the k largest values; each context's value and key are its row's; bands hold
    rows of their band of the final max, each band as full as its rows allow."""
    for criterion in criteria:
        rows = expected["rows"][criterion]
        values = np.stack([r[0] for r in rows], axis=-1)  # [L, H, rows]
        found = atlas.contexts[criterion]
        top = -np.sort(-values, axis=-1)[..., : settings.top_k]
        np.testing.assert_allclose(found.value, top, rtol=1e-5, err_msg=criterion)
        where = {(w, q): i for i, (_, w, q, _) in enumerate(rows)}
        keys = {(w, q): key for _, w, q, key in rows}
        layers, heads = expected["shape"]
        for layer in range(layers):
            for head in range(heads):
                for j in range(settings.top_k):
                    w, q = int(found.window[layer, head, j]), int(found.query[layer, head, j])
                    assert values[layer, head, where[w, q]] == pytest.approx(
                        found.value[layer, head, j], rel=1e-5
                    )
                    if criterion == "attention":
                        assert found.key[layer, head, j] == keys[w, q][layer, head]
                peak = values[layer, head].max()
                for d in range(settings.deciles):
                    low, high = peak * (1 - (d + 1) / settings.deciles), peak * (1 - d / settings.deciles)
                    kept = found.band_value[layer, head, d]
                    kept = kept[np.isfinite(kept)]
                    assert ((kept > low - 1e-6) & (kept <= high + 1e-6)).all()
                    for w, q, v in zip(
                        found.band_window[layer, head, d],
                        found.band_query[layer, head, d],
                        found.band_value[layer, head, d],
                        strict=True,
                    ):
                        if w >= 0:
                            assert values[layer, head, where[int(w), int(q)]] == pytest.approx(v, rel=1e-5)
                    inside = (
                        ((values[layer, head] > low) & (values[layer, head] <= high)).sum()
                        if d < settings.deciles - 1
                        else (values[layer, head] <= high).sum()
                    )
                    assert len(kept) == min(settings.per_decile, inside), (criterion, layer, head, d)


def test_every_score_equals_head_detectors_definition_on_exact_maps(built, expected):
    check_scores(built, expected)
    assert {m.name for m in METRICS} == {*TARGETS, "distance", "entropy"}


def test_top_contexts_are_exactly_the_largest_by_each_criterion(built, expected):
    check_contexts(built, expected, SMALL)


def test_windows_start_with_the_fixed_first_token_and_cover_the_corpus(tiny, built):
    bos = tiny.tokenizer.convert_tokens_to_ids("<s>")
    assert (built.tokens[:, 0] == bos).all()
    body = tiny.tokenizer(corpus().text, add_special_tokens=False)["input_ids"]
    assert [int(i) for row in built.tokens for i in row[1:] if i >= 0] == body
    assert built.tokens.shape[1] == SMALL.window and built.tokens[-1, -1] == -1  # a short last window
    assert built.causal and built.layers == 2 and built.heads == 4


def test_a_rebuilt_atlas_is_the_same(tiny, built):
    again = builder.build(tiny, corpus(), SMALL)
    for name in built.scores:
        np.testing.assert_array_equal(again.scores[name], built.scores[name])
    for criterion in CRITERIA:
        for field in ("window", "query", "key", "value", "band_window", "band_query", "band_value"):
            np.testing.assert_array_equal(
                getattr(again.contexts[criterion], field), getattr(built.contexts[criterion], field)
            )


def test_progress_reaches_one_with_an_estimate_of_the_time_left(tiny):
    seen = []
    builder.build(tiny, corpus(8), SMALL, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] == 0.0
    assert any("left" in m for _, m in seen[1:-1])


def test_one_layer_one_head():
    tiny = decoder(num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1)
    atlas = builder.build(tiny, corpus(10), SMALL)
    expected = brute(tiny, atlas.tokens, SMALL)
    assert atlas.scores["entropy"].shape == (1, 1)
    check_scores(atlas, expected)
    check_contexts(atlas, expected, SMALL)


def test_an_encoder_sees_both_ways_and_says_what_changes():
    tiny = encoder()
    atlas = builder.build(tiny, corpus(12), SMALL)
    assert not atlas.causal
    assert (atlas.tokens[:, 0] == tiny.tokenizer.cls_token_id).all()
    expected = brute(tiny, atlas.tokens, SMALL)
    check_scores(atlas, expected)
    check_contexts(atlas, expected, SMALL)
    notes = {m.name: m.encoder_note for m in METRICS}
    assert "earlier copies" in notes["induction"] and "earlier copies" in notes["duplicate_token"]


def test_a_model_the_map_cannot_place_keeps_its_attention_metrics(monkeypatch):
    monkeypatch.delitem(model_map.BY_MODEL_TYPE, "llama")
    tiny = decoder(seed=1)  # a fresh model: its layout is found by discovery
    atlas = builder.build(tiny, corpus(10), SMALL)
    assert any("before the projection" in n for n in atlas.notices)
    expected = brute(tiny, atlas.tokens, SMALL)
    check_scores(atlas, expected)
    check_contexts(atlas, expected, SMALL)


def test_models_it_cannot_read_are_refused_clearly(tiny):
    with pytest.raises(UserError, match="no room"):
        builder.build(tiny, corpus(2), SMALL.__class__(window=1))
    vision = type(tiny)("v", "vision", tiny.model, None, None, "cpu")
    with pytest.raises(UserError, match="text models"):
        builder.build(vision, corpus(2), SMALL)


def test_the_weights_identity_changes_with_the_weights(tiny):
    assert builder.model_id(tiny) == builder.model_id(tiny)
    assert builder.model_id(tiny) != builder.model_id(decoder(seed=5))


def test_what_was_cut_from_the_corpus_reaches_the_atlas(tiny):
    cut = corpus(4).__class__(
        "big.txt", corpus(4).text, corpus(4).hash, "big.txt has 9 bytes; only the first 5 are read."
    )
    assert builder.build(tiny, cut, SMALL).notices == (cut.notice,)
