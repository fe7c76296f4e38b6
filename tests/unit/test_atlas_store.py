"""The Head Atlas's corpora, store and command: keys, round trips, stale formats, disks that refuse."""

from __future__ import annotations

import errno
import json

import numpy as np
import pytest
from atlas_helpers import SMALL, corpus, decoder

from txviz import cli, models
from txviz.atlas import atlas as schema
from txviz.atlas import build as builder
from txviz.atlas import corpus as corpora
from txviz.atlas import store
from txviz.atlas.atlas import CRITERIA


@pytest.fixture(scope="module")
def tiny():
    return decoder()


@pytest.fixture(autouse=True)
def atlas_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TXVIZ_ATLAS_DIR", str(tmp_path / "atlas"))
    return tmp_path / "atlas"


def same(a, b) -> None:
    """Every field of two atlases equal (arrays exactly, NaN equal to NaN)."""
    for name in (
        "model",
        "model_id",
        "corpus",
        "corpus_hash",
        "settings",
        "causal",
        "layers",
        "heads",
        "format",
    ):
        assert getattr(a, name) == getattr(b, name), name
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert a.scores.keys() == b.scores.keys() and a.contexts.keys() == b.contexts.keys()
    for name in a.scores:
        np.testing.assert_array_equal(a.scores[name], b.scores[name])
    for c in CRITERIA:
        for field in store._FIELDS:
            np.testing.assert_array_equal(getattr(a.contexts[c], field), getattr(b.contexts[c], field))


def test_python_docs_ship_with_python_and_hash_their_bytes():
    docs = corpora.shipped()["python-docs"]()
    assert len(docs.text) > 100_000 and "with" in docs.text
    assert docs.hash == corpora.of_text("x", docs.text).hash == corpora.python_docs().hash


def test_uploads_are_read_as_text_or_refused_with_the_reason():
    assert corpora.from_upload("a.txt", "héllo world".encode()).text == "héllo world"
    for data, reason in (
        (b"", "empty"),
        (b"  \n\t", "empty"),
        (b"\x89PNG\r\n\x00\x00", "binary"),
        (b"caf\xe9 au lait", "not UTF-8"),
    ):
        with pytest.raises(corpora.AtlasCorpusError, match=reason):
            corpora.from_upload("a.txt", data)


def test_a_corpus_past_the_limit_is_cut_with_a_notice(monkeypatch):
    monkeypatch.setattr(corpora, "MAX_UPLOAD_BYTES", 10)
    found = corpora.from_upload("big.txt", "ééééééé".encode())  # 14 bytes: the cut falls inside a character
    assert found.text == "ééééé" and "first 10" in found.notice and "14" in found.notice


def test_one_byte_changed_in_the_corpus_makes_a_new_key(tiny):
    a, b = corpora.of_text("c", "the cat sat."), corpora.of_text("c", "the cat sat!")
    assert a.hash != b.hash
    assert store.key(tiny, a, SMALL) != store.key(tiny, b, SMALL)
    assert store.key(tiny, a, SMALL) == store.key(tiny, corpora.of_text("other name", a.text), SMALL)
    assert store.key(tiny, a, SMALL) != store.key(tiny, a, SMALL.__class__(window=32))
    assert store.key(tiny, a, SMALL) != store.key(decoder(seed=7), a, SMALL)


def test_a_stored_atlas_opens_equal_to_the_built_one_without_building(tiny, atlas_dir, monkeypatch):
    assert store.find(tiny, corpus(10), SMALL) is None
    built, notices = store.open_or_build(tiny, corpus(10), SMALL)
    assert notices == ()
    same(store.find(tiny, corpus(10), SMALL), built)
    folder = atlas_dir / store.key(tiny, corpus(10), SMALL)
    assert sorted(p.name for p in folder.iterdir()) == sorted([store.ARRAYS, store.META])
    monkeypatch.setattr(builder, "build", lambda *a, **k: pytest.fail("built again"))
    opened, notices = store.open_or_build(tiny, corpus(10), SMALL)
    assert notices == ()
    same(opened, built)
    same(store.load(folder), built)


def test_a_stale_atlas_is_rebuilt_with_a_notice(tiny, atlas_dir, monkeypatch):
    store.open_or_build(tiny, corpus(10), SMALL)
    old = atlas_dir / store.key(tiny, corpus(10), SMALL)
    monkeypatch.setattr(schema, "FORMAT", schema.FORMAT + 1)
    atlas, notices = store.open_or_build(tiny, corpus(10), SMALL)
    assert any("another txviz version" in n for n in notices)
    assert not old.exists() and (atlas_dir / store.key(tiny, corpus(10), SMALL)).exists()
    assert atlas.format == schema.FORMAT


def test_an_atlas_whose_file_says_another_format_is_rebuilt(tiny, atlas_dir):
    store.open_or_build(tiny, corpus(10), SMALL)
    meta = atlas_dir / store.key(tiny, corpus(10), SMALL) / store.META
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps({**data, "format": 0}))
    atlas, notices = store.open_or_build(tiny, corpus(10), SMALL)
    assert any("format 0" in n for n in notices) and atlas.format == schema.FORMAT
    assert json.loads(meta.read_text())["format"] == schema.FORMAT


@pytest.mark.parametrize("code, words", [(errno.EROFS, "Read-only"), (errno.ENOSPC, "No space")])
def test_a_disk_that_refuses_keeps_the_atlas_in_memory_with_a_notice(tiny, monkeypatch, code, words):
    def refuse(*args, **kwargs):
        raise OSError(code, words)

    monkeypatch.setattr(store.tempfile, "mkdtemp", refuse)
    atlas, notices = store.open_or_build(tiny, corpus(10), SMALL)
    assert atlas.scores["previous_token"].shape == (2, 4)
    assert len(notices) == 1 and words in notices[0] and "memory" in notices[0]


def test_the_command_builds_then_opens_and_says_where(tiny, tmp_path, atlas_dir, monkeypatch, capsys):
    monkeypatch.setattr(models, "load", lambda *args, **kwargs: tiny)
    path = tmp_path / "corpus.txt"
    path.write_text(corpus(10).text)
    argv = ["atlas", "--model", "tiny", "--corpus", str(path), "--window", "24", "--batch", "3"]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    folder = next(atlas_dir.iterdir())
    assert str(folder) in out and "2 layers x 4 heads" in out and "100.0%" in err
    assert cli.main(argv) == 0
    assert str(folder) in capsys.readouterr().out
    assert cli.main(["atlas", "--corpus", str(tmp_path / "missing.txt")]) == 2
    assert "no such file" in capsys.readouterr().err
