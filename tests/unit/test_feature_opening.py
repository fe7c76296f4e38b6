"""What the Features page opens (txviz.features.opening) and the `features` command: the places, the memory
said before a build, a dictionary trained, indexed, stored and opened again, and bad input refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from atlas_helpers import corpus, decoder

from txviz import cli, models
from txviz.features import opening, store
from txviz.features.activations import FeaturesError, Place
from txviz.features.index import FeatureIndex
from txviz.features.sae import Settings

SMALL = Settings(
    expansion=4, k=5, tokens=512, batch=64, lr=1e-3, aux_k=8, dead_after=128, window=16, held_out=128
)


@pytest.fixture(autouse=True)
def _features_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(tmp_path / "features"))


def test_every_place_of_every_block_is_offered_and_named_in_words():
    loaded = decoder()
    names = opening.places(loaded)
    assert names == [
        f"decoder.{n}.{kind}" for n in range(loaded.n_layers) for kind in ("resid_pre", "head_out")
    ]
    assert opening.default_place(loaded) == f"decoder.{loaded.n_layers // 2}.resid_pre"
    assert "heads" in opening.place_label("decoder.1.head_out")
    assert "residual stream" in opening.place_label("decoder.0.resid_pre")


def test_the_memory_estimate_grows_with_tokens_and_width_and_a_build_too_large_is_refused(monkeypatch):
    loaded, place = decoder(), Place("resid_pre", 1)
    small = opening.memory(loaded, place, SMALL)
    d = loaded.model.config.hidden_size
    assert small.needed >= (SMALL.tokens + SMALL.held_out) * d * 4 + 3 * 2 * d * SMALL.expansion * d * 4
    assert opening.memory(loaded, place, dataclasses.replace(SMALL, tokens=4096)).needed > small.needed
    assert opening.memory(loaded, place, dataclasses.replace(SMALL, expansion=8)).needed > small.needed
    monkeypatch.setattr(opening, "available_memory", lambda: small.needed)  # less than it needs / 0.8
    with pytest.raises(FeaturesError, match="more than this machine can spare"):
        opening.check_memory(loaded, place, SMALL)
    with pytest.raises(FeaturesError, match="more than this machine can spare"):
        opening.open_or_build(loaded, corpus(120), place, SMALL)
    monkeypatch.setattr(opening, "available_memory", lambda: None)  # unknown: not refused
    assert opening.check_memory(loaded, place, SMALL).fits


def test_a_build_is_indexed_stored_found_and_opened_again():
    loaded, text, place = decoder(), corpus(120), Place("head_out", 1)
    assert not opening.stored(loaded, text, place, SMALL)
    seen = []
    built = opening.open_or_build(loaded, text, place, SMALL, lambda f, t: seen.append((f, t)))
    assert seen and all(0 <= f <= 1 for f, _ in seen) and any("indexing" in t for _, t in seen)
    assert opening.stored(loaded, text, place, SMALL)
    ((folder, meta),) = store.find(built.meta["model_id"], place.name)
    assert meta["place"] == place.name and (folder / "index.npz").exists()
    again = opening.open_stored(loaded, folder)
    assert again.place == place and again.sae.width == built.sae.width
    assert (again.index.density == built.index.density).all()
    assert isinstance(FeatureIndex.load(folder), FeatureIndex)
    other = decoder(seed=1)  # other weights: the digest refuses the dictionary
    with pytest.raises(FeaturesError, match="other weights"):
        opening.open_stored(other, folder)
    assert store.find(opening.model_id(other), place.name) == []


def test_an_index_that_cannot_be_stored_stays_in_memory_with_a_notice(monkeypatch):
    def full(self, folder):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(FeatureIndex, "save", full)
    found = opening.open_or_build(decoder(), corpus(120), Place("resid_pre", 0), SMALL)
    assert any("could not be stored" in n for n in found.notices)
    assert found.index.tokens > 0


def test_the_command_trains_then_opens_and_refuses_a_tiny_corpus(tmp_path, monkeypatch, capsys):
    tiny = decoder()
    monkeypatch.setattr(models, "load", lambda *args, **kwargs: tiny)
    path = tmp_path / "corpus.txt"
    path.write_text(corpus(1500).text)
    argv = [
        "features",
        "--model",
        "tiny",
        "--corpus",
        str(path),
        "--tokens",
        "1024",
        "--expansion",
        "2",
        "--k",
        "4",
    ]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert "decoder.1.resid_pre" in out and "features" in out and "of memory" in err and "100.0%" in err
    assert cli.main(argv) == 0  # stored: opened
    short = tmp_path / "short.txt"
    short.write_text(corpus(3).text)
    assert cli.main(["features", "--model", "tiny", "--corpus", str(short)]) == 2
    assert "at least" in capsys.readouterr().err
    assert cli.main(["features", "--model", "tiny", "--place", "decoder.1.mlp"]) == 2
    assert "not a place" in capsys.readouterr().err


def test_a_dictionary_stored_without_its_index_is_indexed_when_opened(monkeypatch, tmp_path):
    from txviz.atlas import opening as atlas_opening
    from txviz.features import build

    loaded, text, place = decoder(), corpus(120), Place("resid_pre", 1)
    made = build.build(loaded, text, place, SMALL)  # the trainer alone stores no index
    assert not (made.folder / "index.npz").exists()
    with pytest.raises(FeaturesError, match="not at hand"):
        opening.open_stored(loaded, made.folder)  # "tiny text" is no shipped corpus
    monkeypatch.setattr(atlas_opening, "shipped", lambda: {text.name: lambda: text})
    found = opening.open_stored(loaded, made.folder)
    assert (made.folder / "index.npz").exists() and found.index.tokens > 0
    # a fresh build elsewhere indexes from the activations it trained on: the same index as the forwards give
    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(tmp_path / "elsewhere"))
    fresh = opening.open_or_build(decoder(), text, place, SMALL)
    np.testing.assert_allclose(fresh.index.density, found.index.density)
    np.testing.assert_allclose(fresh.index.top_value, found.index.top_value, rtol=1e-5)


def test_the_page_opens_on_a_feature_firing_near_one_token_in_two_hundred():
    built = opening.open_or_build(decoder(), corpus(120), Place("resid_pre", 1), SMALL)
    index = dataclasses.replace(built.index, density=np.array([0.3, 0.004, 0.0, 0.02, 0.006]), tokens=10_000)
    assert opening.first_feature(index) == 4  # 60 tokens, nearest 1 in 200 on a log scale (0.004 is farther)
    rare = dataclasses.replace(index, density=np.array([0.0, 0.0002, 0.0, 0.0, 0.0]))
    assert opening.first_feature(rare) == 1  # none fires ten times: the one that fires at all
    assert opening.first_feature(dataclasses.replace(index, density=np.zeros(5))) == 0
    assert (
        built.meta["seconds"] > 0 and store.find(built.meta["model_id"])[0][1]["seconds"] > 0
    )  # kept on disk


def test_whitespace_tokens_show_as_marks_in_the_contexts_figure():
    from txviz.features import figures

    assert [figures.visible(t) for t in ("\n", " ", "  ", "\t", " cat")] == ["↵", "␣", "␣␣", "⇥", " cat"]
    figure = figures.contexts([["<b>", "\n"]], np.array([[0.5, 1.0]]), [1.0], "t")
    assert figure.data[0].text[0] == ["&lt;b&gt;", "↵"]  # escaped for plotly, never markup
