"""Decomposable attention: the book's equations step by step on a hand-computed case, the corpus,
the word reader, and the shipped models' held-out accuracy reproduced on a fixed subset."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from txviz.entailment import contextual, corpus, train
from txviz.entailment.model import LABELS, DecomposableAttention, run_steps
from txviz.entailment.vectors import MAX_WORDS, SentenceError, WordVectors, read_words

E = math.e


def identity_model() -> DecomposableAttention:
    """d = 2, every map chosen by hand: project = f = identity, g sums its two halves, h reads two units."""
    model = DecomposableAttention(d_embed=2, hidden=2, dropout=0.0, d_word=2)
    eye = torch.eye(2)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.project.weight.copy_(eye)
        model.f[1].weight.copy_(eye)
        model.f[4].weight.copy_(eye)
        model.g[1].weight.copy_(torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1]]))  # g([x, y]) = x + y
        model.g[4].weight.copy_(eye)
        model.h[0][1].weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0, 0, 1, 0]]))  # v_A[0], v_B[0]
        model.h[0][4].weight.copy_(eye)
        model.h[1].weight.copy_(torch.tensor([[1.0, 0], [0, 1], [1, -1]]))
    return model.eval()


def test_equations_step_by_step_on_a_hand_computed_case():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    b = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    s = run_steps(identity_model(), a, b, ("a1", "a2"), ("b1", "b2"))
    # (15.46) e_ij = a_i . b_j
    np.testing.assert_allclose(s.e, [[1, 1], [0, 1]], atol=1e-6)
    # softmax over j (rows) and over i (columns)
    np.testing.assert_allclose(s.to_b, [[0.5, 0.5], [1 / (1 + E), E / (1 + E)]], atol=1e-6)
    np.testing.assert_allclose(s.to_a, [[E / (1 + E), 0.5], [1 / (1 + E), 0.5]], atol=1e-6)
    # (15.47) beta_0 = (b1 + b2)/2 = [1, .5]; beta_1 = [1, e/(1+e)]
    # (15.50) alpha_0 = [e/(1+e), 1/(1+e)]; alpha_1 = [.5, .5]
    # (15.48, 15.51) g([x, beta]) = x + beta
    t = E / (1 + E)
    np.testing.assert_allclose(s.v_a, [[2, 0.5], [1, 1 + t]], atol=1e-6)
    np.testing.assert_allclose(s.v_b, [[1 + t, 1 - t], [1.5, 1.5]], atol=1e-6)
    # (15.49, 15.52) sums
    np.testing.assert_allclose(s.sum_a, [3, 1.5 + t], atol=1e-6)
    np.testing.assert_allclose(s.sum_b, [2.5 + t, 2.5 - t], atol=1e-6)
    # (15.53) logits [v_A[0], v_B[0], v_A[0] - v_B[0]] then softmax
    logits = np.array([3, 2.5 + t, 0.5 - t])
    np.testing.assert_allclose(s.probabilities, np.exp(logits) / np.exp(logits).sum(), atol=1e-6)
    assert s.label == "neutral"  # 2.5 + e/(1+e) > 3


def test_padding_changes_nothing():
    torch.manual_seed(0)
    model = DecomposableAttention(6, 5, 0.0, 4).eval()
    a, b = torch.randn(3, 6), torch.randn(2, 6)
    alone = model(a[None], b[None], torch.ones(1, 3, dtype=torch.bool), torch.ones(1, 2, dtype=torch.bool))
    pad_a = torch.cat([a, torch.randn(4, 6)])[None]
    pad_b = torch.cat([b, torch.randn(5, 6)])[None]
    mask_a = torch.tensor([[True] * 3 + [False] * 4])
    mask_b = torch.tensor([[True] * 2 + [False] * 5])
    torch.testing.assert_close(model(pad_a, pad_b, mask_a, mask_b), alone)


def test_corpus_is_reproducible_balanced_and_disjoint():
    first, held = corpus.split(600, 300, seed=3)
    again, _ = corpus.split(600, 300, seed=3)
    assert first == again
    assert {p.label for p in first} == set(LABELS)
    assert [p.label for p in first].count("neutral") == 200
    assert not {(p.premise, p.hypothesis) for p in first} & {(p.premise, p.hypothesis) for p in held}
    for pair in first + held:
        if pair.rule == "negation":
            assert " not " in pair.hypothesis and pair.label == "contradiction"
        if pair.rule == "negated exclusive":
            assert " not " in pair.hypothesis and pair.label == "entailment"
        if pair.rule == "place class":
            assert pair.hypothesis.endswith(("inside", "outside")) and pair.label == "entailment"
    assert all(p.label == "neutral" for p in corpus.swapped_roles(10))
    assert not any(map(corpus.mentions_unseen, first + held))
    unseen = corpus.unseen_words(30, seed=3)
    assert all(map(corpus.mentions_unseen, unseen)) and len(set(unseen)) == 30


def test_reading_words_and_bad_input():
    assert read_words("A <b>Dog</b> isn't  here!").words == ("a", "b", "dog", "b", "isn't", "here")
    for empty in ("", "   ", "!!! ... ---"):
        with pytest.raises(SentenceError, match="no words"):
            read_words(empty, "premise")
    long = read_words("word " * 5000)
    assert len(long.words) == MAX_WORDS and "5,000 words" in long.notice
    assert read_words("ok").notice == ""


@pytest.fixture(scope="module")
def vectors(minilm):
    return WordVectors.from_loaded(minilm)


def test_word_vectors_average_the_pieces(vectors):
    pieces = vectors.pieces("skimming")
    assert len(pieces) > 1  # not one WordPiece: the mean of several
    ids = vectors.tokenizer.convert_tokens_to_ids(pieces)
    torch.testing.assert_close(vectors.vector("skimming"), vectors.embedding[ids].mean(0))
    assert vectors(["zzqxw", "dog"]).shape == (2, 384)  # unknown words still get a vector


def test_shipped_models_reproduce_their_held_out_accuracy_on_a_fixed_subset(vectors):
    models, meta = train.load()
    config = train.TrainConfig(**meta["config"])
    _, held_out = corpus.split(config.train_pairs, config.held_out_pairs, config.seed)
    data = train.encode(held_out[: train.SUBSET], vectors)
    for name, model in models.items():
        assert train.accuracy(model, data) == pytest.approx(meta[name]["heldout_subset_accuracy"], abs=1e-4)
    assert meta["attention"]["heldout_accuracy"] > 1 / 3 + 0.3  # far above chance
    unseen = train.encode(corpus.unseen_words(seed=config.seed), vectors)
    for name, model in models.items():
        assert train.accuracy(model, unseen) == pytest.approx(meta[name]["unseen_words_accuracy"], abs=1e-4)


def test_tiny_training_run_writes_and_loads(tmp_path, vectors):
    config = train.TrainConfig(train_pairs=300, held_out_pairs=90, steps=20, batch_size=16)
    models, metrics = train.train_all(config, vectors)
    train.save(models, metrics, tmp_path)
    loaded, meta = train.load(tmp_path)
    assert json.loads((tmp_path / "txviz.json").read_text())["kind"] == "entailment"
    assert set(meta["attention"]["swapped_roles"]) == set(LABELS)
    a, b = vectors(["a", "dog"]), vectors(["the", "animal"])
    ones = torch.ones(1, 2, dtype=torch.bool)
    with torch.no_grad():
        torch.testing.assert_close(
            loaded["attention"](a[None], b[None], ones, ones),
            models["attention"].eval()(a[None], b[None], ones, ones),
        )


def test_training_command_is_seeded(tmp_path, minilm):
    from txviz.training import entailment

    args = ["--steps", "10", "--train-pairs", "150", "--out"]
    assert entailment.main([*args, str(tmp_path / "one")]) == 0
    assert entailment.main([*args, str(tmp_path / "two")]) == 0
    one = json.loads((tmp_path / "one" / "txviz.json").read_text())
    two = json.loads((tmp_path / "two" / "txviz.json").read_text())
    assert one["attention"]["heldout_accuracy"] == two["attention"]["heldout_accuracy"]
    assert (tmp_path / "one" / "attention.safetensors").read_bytes() == (
        tmp_path / "two" / "attention.safetensors"
    ).read_bytes()


def test_minilm_alignment_of_a_sentence_with_itself(minilm):
    words = ("the", "cat", "chased", "a", "mouse")
    result = contextual.alignment(minilm, words, words)
    assert result.e.shape == (5, 5)
    np.testing.assert_allclose(result.to_b.sum(1), 1, atol=1e-5)
    np.testing.assert_allclose(result.to_a.sum(0), 1, atol=1e-5)
    assert (result.to_b.argmax(1) == np.arange(5)).all()  # each word finds itself
    np.testing.assert_allclose(np.diag(result.e), 10, rtol=1e-5)  # cosine 1 over T = 0.1
    other = contextual.alignment(
        minilm, ("a", "tall", "man", "is", "sprinting"), ("the", "person", "is", "running")
    )
    assert other.to_b[2].argmax() == 1 and other.to_b[4].argmax() == 3  # man -> person, sprinting -> running
