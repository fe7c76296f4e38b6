"""The four small trained models: the shipped weights give the held-out numbers in their runs.json."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.entailment import relatedness as rel
from txviz.entailment.vectors import WordVectors
from txviz.masks import peeking
from txviz.objectives import encoder_tasks, finetune
from txviz.seq2seq import nat
from txviz.seq2seq import numbers as nb

TOLERANCE = 0.02  # another CPU's rounding moves a few of 300-1,000 held-out answers at most


def test_peeking_decoders_give_their_losses_and_generations():
    models, runs = peeking.load()
    held_out = nb.split(runs["config"]["held_out"])[1]
    for mask, model in models.items():
        causal = mask == "causal"
        losses = peeking.losses(model, causal, held_out)
        for what, value in losses.items():
            assert value == pytest.approx(runs[mask]["heldout_loss"][what], abs=1e-3)
        exact = peeking.exact(peeking.generate(model, causal, held_out), held_out)
        assert exact == pytest.approx(runs[mask]["heldout_generation_exact"], abs=TOLERANCE)
    # the story the page tells: no mask trains lower, then cannot generate
    assert (
        runs["none"]["train_loss"]["all"]
        < 0.2
        < runs["digit_floor"] * 0.35
        < runs["causal"]["train_loss"]["all"]
    )
    assert (
        runs["causal"]["heldout_generation_exact"] > 0.98 and runs["none"]["heldout_generation_exact"] < 0.05
    )


def test_digit_readers_give_their_held_out_verdicts():
    models, runs = nat.load()
    held_out = nb.split(runs["config"]["held_out"])[1]
    for name, model in models.items():
        texts = nat.decode(model, held_out).texts
        verdicts = [nat.verdict(t, d) for t, d in zip(texts, held_out, strict=True)]
        for verdict in nat.VERDICTS:
            assert verdicts.count(verdict) / len(held_out) == pytest.approx(
                runs[name]["heldout"][verdict], abs=TOLERANCE
            )
    assert runs["at"]["heldout"]["neither"] < 0.02 < 0.5 < runs["nat"]["heldout"]["neither"]
    assert runs["nat_english"]["heldout"]["English"] > 0.95


def test_relatedness_gives_its_held_out_errors(minilm):
    model, runs = rel.load()
    vectors = WordVectors.from_loaded(minilm)
    held_out = rel.split(rel.RelatednessConfig(**runs["config"]))[1]
    gold = np.array([p.score for p in held_out])
    errors = rel.errors(rel.predict(model, held_out, vectors), gold)
    for what, value in errors.items():
        assert value == pytest.approx(runs["heldout"]["decomposable attention"][what], abs=TOLERANCE)
    mean = runs["heldout"]["the training mean"]
    assert mean["rmse"] == pytest.approx(np.sqrt(np.mean((gold - runs["train_mean"]) ** 2)), abs=1e-3)
    assert errors["rmse"] < runs["heldout"]["word overlap, a fitted line"]["rmse"] < mean["rmse"]


def test_fine_tuned_and_frozen_runs_give_their_held_out_numbers():
    shipped = finetune.load()
    heldout = encoder_tasks.train_and_heldout(encoder_tasks.SEED)[1]
    assert len(heldout) == shipped["heldout_sentences"]
    for name in finetune.RUNS:
        again = finetune.evaluate(*finetune.load_run(name), heldout)
        stated = shipped[name]["heldout"]
        assert again["sentence_accuracy"] == pytest.approx(stated["sentence_accuracy"], abs=TOLERANCE)
        assert again["tagger"]["word_accuracy"] == pytest.approx(
            stated["tagger"]["word_accuracy"], abs=TOLERANCE
        )
    tuned, frozen = shipped["fine-tuned"]["heldout"], shipped["frozen"]["heldout"]
    assert tuned["sentence_accuracy"] > frozen["sentence_accuracy"] > shipped["majority_accuracy"]
    assert tuned["tagger"]["word_accuracy"] > frozen["tagger"]["word_accuracy"]


def test_a_short_peeking_run_repeats_exactly_from_its_seed():
    config = peeking.PeekConfig(steps=15, held_out=20)
    first, second = peeking.train(False, config)[1], peeking.train(False, config)[1]
    assert first["curve"] == second["curve"] and first["heldout_loss"] == second["heldout_loss"]
    assert first["curve"][-1] < first["curve"][0]
