"""Using an encoder: the true/false pairs, the baselines and the tag scores against hand counts."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.objectives import corpus
from txviz.objectives import encoder_tasks as tasks


def test_every_sentence_has_a_decided_word_and_its_false_twin_differs_there_only():
    train, heldout = tasks.train_and_heldout()
    for true, false in zip(train[::2], train[1::2], strict=True):
        assert true.label == 0 and false.label == 1 and sum(true.tags) == 0 and sum(false.tags) == 1
        differ = [i for i, (a, b) in enumerate(zip(true.words, false.words, strict=True)) if a != b]
        assert differ == [false.tags.index(1)]
    assert {w for e in train + heldout for w in e.words} <= set(corpus.vocabulary())
    held_sentences = {e.text for e in heldout if e.label == 0}
    assert held_sentences == set(corpus.train_and_heldout()[1]) - {
        s for s in corpus.train_and_heldout()[1] if "sheep" in s.split() and ({"is", "are"} & set(s.split()))
    }


def decided(text: str) -> tuple[int, list[str]]:
    return tasks.decided_word(text.split())


def test_decided_words():
    assert decided("the dog barks loudly in the garden") == (2, tasks.SOUNDS)
    assert decided("after monday comes tuesday")[0] == 3
    assert decided("anna said that she was tired") == (3, ["he", "she"])
    assert decided("tom stayed home because he was late")[0] == 4
    assert decided("the old cats are in the yard") == (3, ["is", "are"])
    assert decided("the opposite of hot is cold")[0] == 5


def test_baselines_against_hand_counts():
    make = tasks.Example
    train = [make(("a", "b"), 0, (0, 0)), make(("a", "c"), 1, (0, 1)), make(("d", "c"), 1, (0, 1))]
    heldout = [make(("a", "c"), 1, (0, 1)), make(("a", "b"), 0, (0, 0))]
    assert tasks.majority_accuracy(train, heldout) == 0.5  # "false" is the majority: one of two right
    assert tasks.word_tag_baseline(train) == {"a": 0, "b": 0, "c": 1, "d": 0}
    scores = tasks.tag_scores([np.array([0, 1]), np.array([0, 1])], heldout)
    assert scores == {"word_accuracy": 0.75, "false_sentences_exact": 1.0}


def test_shipped_probes_are_consistent_and_beat_their_baselines():
    probes = tasks.load_probes()
    runs = probes.runs
    assert probes.sentence_coef.shape == probes.tag_coef.shape == (1, 64)
    assert runs["majority_accuracy"] == 0.5  # every sentence appears true and false
    assert runs["sentence_accuracy"] > runs["majority_accuracy"]
    assert runs["tagger"]["word_accuracy"] > runs["word_tag_baseline"]["word_accuracy"]
    assert runs["tagger"]["false_sentences_exact"] > runs["word_tag_baseline"]["false_sentences_exact"]
    x = np.random.default_rng(0).normal(size=(3, 64))
    expected = 1 / (1 + np.exp(-(x @ probes.sentence_coef[0] + probes.sentence_intercept[0])))
    assert probes.sentence_false_probability(x) == pytest.approx(expected)
    rows = tasks.score_rows(runs)
    assert rows[0]["probe (held out)"] == runs["sentence_accuracy"]
