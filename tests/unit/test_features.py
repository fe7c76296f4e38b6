"""Sparse autoencoders at a place (txviz.features): the dictionary's maths by hand, training that resumes
exactly, the store's digest check, and the spliced loss at its two ends (identity and zeros)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from atlas_helpers import corpus, decoder

from txviz.atlas.build import model_id
from txviz.core.capture import CaptureSettings
from txviz.core.running import run
from txviz.features import quality, store
from txviz.features.activations import (
    FeaturesError,
    Place,
    at_place,
    check_place,
    recorded,
    recording,
    token_windows,
)
from txviz.features.build import build, minimum_tokens, split
from txviz.features.sae import Settings, start_state, train

SMALL = Settings(
    expansion=4, k=5, tokens=512, batch=64, lr=1e-3, aux_k=8, dead_after=128, window=16, held_out=128
)
PLACES = (Place("resid_pre", 1), Place("head_out", 1), Place("resid_pre", 0))


def data(n: int = 512, d: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, d)) * np.linspace(0.5, 3, d) + 1.0).astype(np.float32)


def by_hand(sae, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TopK SAE encode and decode in numpy, from the formulas: latents (N, m) and reconstruction (N, d)."""
    w_enc, b_enc = sae.W_enc.numpy().astype(np.float64), sae.b_enc.numpy().astype(np.float64)
    w_dec, b_dec = sae.W_dec.numpy().astype(np.float64), sae.b_dec.numpy().astype(np.float64)
    pre = np.maximum((x / sae.scale - b_dec) @ w_enc + b_enc, 0.0)
    z = np.zeros_like(pre)
    for i, row in enumerate(pre):
        top = np.argsort(-row)[: sae.k]
        z[i, top] = row[top]
    return z, (z @ w_dec + b_dec) * sae.scale


def test_reconstruction_l0_and_fve_match_a_computation_by_hand():
    train_x, held = data(512), data(200, seed=1)
    sae = train(train_x, SMALL).sae
    z, x_hat = by_hand(sae, held.astype(np.float64))
    fve = 1 - ((held - x_hat) ** 2).sum() / ((held - held.mean(0)) ** 2).sum()
    found = quality.reconstruction(sae, held)
    assert found.fve == pytest.approx(fve, abs=1e-5)
    assert found.l0 == pytest.approx((z > 0).sum(1).mean())
    assert found.dead == int((~(z > 0).any(0)).sum())
    assert found.width == 64 and found.tokens == 200
    np.testing.assert_allclose(sae(torch.from_numpy(held)).numpy(), x_hat, atol=1e-4)


def test_topk_keeps_exactly_k_and_decoder_rows_stay_unit_norm():
    x = data(300)
    state = train(x, SMALL)
    z = state.sae.encode(torch.from_numpy(x))
    positive = (state.sae.pre_acts(torch.from_numpy(x)) > 0).sum(1)
    assert torch.equal((z > 0).sum(1), positive.clamp(max=SMALL.k))
    assert (positive >= SMALL.k).float().mean() > 0.9  # most tokens have k candidates: exactly k kept
    torch.testing.assert_close(state.sae.W_dec.norm(dim=1), torch.ones(state.sae.width))
    assert state.step == SMALL.tokens // SMALL.batch


def test_training_learns_something():
    x = data(512)
    before = quality.reconstruction(start_state(x, SMALL).sae, x).fve
    after = quality.reconstruction(train(x, dataclasses.replace(SMALL, tokens=4096)).sae, x).fve
    assert after > before + 0.3


def test_a_resumed_training_equals_an_uninterrupted_one(tmp_path):
    x = data(512)
    settings = dataclasses.replace(SMALL, tokens=1024)  # 16 steps: two epochs of batches
    whole = train(x, settings)
    part = train(x, settings, stop_after=5)
    assert part.step == 5
    folder = store.save(tmp_path / "d", part, {"model_id": "m@1", "total_steps": 16})
    resumed, meta = store.load(folder, "m@1")
    assert meta["step"] == 5
    resumed = train(x, settings, resumed)
    for name, value in whole.sae.weights().items():
        torch.testing.assert_close(resumed.sae.weights()[name], value, rtol=0, atol=0)
    assert torch.equal(resumed.since_fired, whole.since_fired)


def test_the_store_refuses_a_dictionary_of_other_weights(tmp_path):
    state = train(data(256), dataclasses.replace(SMALL, tokens=128))
    folder = store.save(tmp_path / "d", state, {"model_id": "smollm2@aaaa", "total_steps": 2})
    with pytest.raises(FeaturesError, match="other weights"):
        store.load(folder, "smollm2@bbbb")
    assert store.load(folder, "smollm2@aaaa")[1]["model_id"] == "smollm2@aaaa"
    assert not list(tmp_path.glob(".building-*"))  # the staging folder is gone


def test_too_few_tokens_names_the_minimum():
    loaded = decoder()
    with pytest.raises(FeaturesError, match=f"at least {minimum_tokens(SMALL):,}"):
        split(loaded, corpus(3), SMALL)


@pytest.mark.parametrize("place", PLACES, ids=lambda p: p.name)
def test_activations_stop_at_the_place_and_equal_a_full_run(place):
    loaded = decoder()
    ids = torch.from_numpy(token_windows(loaded, corpus(60), 16)[:3])
    full = recorded(run(loaded.model, recording(place), (), input_ids=ids), place)
    # what comes after the place never runs (the place's block, or its FFN after the heads), counted
    # with a hook the test adds and removes itself
    calls = []
    block = loaded.model.model.layers[place.layer]
    after = block.mlp if place.kind == "head_out" else block
    handle = after.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        found = at_place(loaded, place, ids)
    finally:
        handle.remove()
    torch.testing.assert_close(found, full)
    assert calls == []
    assert found.shape[-1] == check_place(loaded, place)


@pytest.mark.parametrize("place", PLACES, ids=lambda p: p.name)
def test_spliced_loss_is_clean_for_identity_and_zero_ablation_for_zeros(place):
    loaded = decoder()
    ids = token_windows(loaded, corpus(60), 16)[:5]
    same = quality.losses(loaded, place, ids, lambda x: x, batch=2)
    zero = quality.losses(loaded, place, ids, torch.zeros_like, batch=2)
    assert same.spliced == pytest.approx(same.clean, abs=1e-6)
    assert zero.spliced == pytest.approx(zero.zero, abs=1e-6)
    assert same.zero != pytest.approx(same.clean)
    assert same.recovered == pytest.approx(1.0) and zero.recovered == pytest.approx(0.0)
    # zero ablation by hand: the point zeroed at every position but the first, through the front door
    from txviz.core.edits import Ablate

    point, layer = place.edit_point()
    x = torch.from_numpy(ids)
    logits = run(
        loaded.model, CaptureSettings(interventions=(Ablate(point, layer, positions=range(1, 16)),)), ("logits",),
        input_ids=x,
    ).logits  # fmt: skip
    hand = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1)
    )
    assert same.zero == pytest.approx(float(hand), abs=1e-5)


def test_places_the_map_cannot_name_are_refused():
    loaded = decoder()
    with pytest.raises(FeaturesError, match="no block 7"):
        check_place(loaded, Place("resid_pre", 7))
    with pytest.raises(FeaturesError, match="not a place"):
        Place.parse("decoder.1.mlp")
    assert Place.parse("decoder.1.head_out") == Place("head_out", 1)


def test_build_stores_resumes_after_an_interruption_and_reopens(tmp_path, monkeypatch):
    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(tmp_path))
    loaded, text = decoder(), corpus(120)
    settings = dataclasses.replace(SMALL, tokens=640, checkpoint_every=2)
    place = Place("resid_pre", 1)
    seen = []
    first = build(loaded, text, place, settings, progress=lambda f, t: seen.append((f, t)), stop_after=4)
    assert not first.done and first.meta["step"] == 4
    assert seen and all(0 <= f <= 1 for f, _ in seen) and any("left" in t for _, t in seen)
    again = build(loaded, text, place, settings)
    assert again.done and any("Resumed" in n for n in again.notices)
    whole = build(loaded, text, place, dataclasses.replace(settings, seed=settings.seed))  # stored: opened
    assert whole.done and not whole.notices
    torch.testing.assert_close(whole.sae.W_dec, again.sae.W_dec)
    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(tmp_path / "other"))
    fresh = build(loaded, text, place, settings)
    torch.testing.assert_close(fresh.sae.W_dec, again.sae.W_dec, rtol=0, atol=0)
    assert whole.meta["model_id"] == model_id(loaded)


def test_a_full_disk_keeps_the_dictionary_in_memory_with_a_notice(tmp_path, monkeypatch):
    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(tmp_path))

    def full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "save", full)
    found = build(decoder(), corpus(120), Place("head_out", 0), dataclasses.replace(SMALL, tokens=256))
    assert found.done and any("could not be stored" in n and "TXVIZ_FEATURES_DIR" in n for n in found.notices)
    assert not any(tmp_path.iterdir())


def test_run_until_leaves_no_edit_behind_for_the_next_call():
    loaded = decoder()
    ids = torch.from_numpy(token_windows(loaded, corpus(60), 16)[:2])
    before = run(loaded.model, CaptureSettings(), ("logits",), input_ids=ids).logits
    at_place(loaded, Place("resid_pre", 1), ids)
    after = run(loaded.model, CaptureSettings(), ("logits",), input_ids=ids).logits
    torch.testing.assert_close(after, before, rtol=0, atol=0)
