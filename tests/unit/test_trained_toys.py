"""The four small trained models' data, masks and measures, checked against formulas (no shipped weights)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr

from txviz.entailment import relatedness as rel
from txviz.masks import peeking
from txviz.seq2seq import nat
from txviz.seq2seq import numbers as nb


def test_digits_read_aloud_in_both_languages():
    assert nb.english(("3", "1", "4")) == ("three", "one", "and", "four")
    assert nb.french(("3", "1", "4")) == ("trois", "un", "quatre")
    assert nb.read_digits("3 1 4") == nb.read_digits("314") == ("3", "1", "4")
    for bad in ("3", "12345", "1 0", "a b"):
        with pytest.raises(nb.NumberInputError):
            nb.read_digits(bad)


def test_held_out_digit_strings_are_never_trained_on():
    sources = nb.all_sources()
    assert len(sources) == len(set(sources)) == 9**2 + 9**3 + 9**4
    train, held_out = nb.split(500)
    assert len(held_out) == 500 and len(train) == len(sources) - 500
    assert not set(train) & set(held_out)


def test_packed_rows_are_whole_examples_one_after_another():
    rows = peeking.packed(nb.split()[0], 4, torch.Generator().manual_seed(0))
    for row in rows:
        assert len(row) == peeking.WINDOW + 1
        words = [nb.WORDS[i] for i in row]
        assert words[0] in nb.DIGITS  # each row starts at an example
        text = " ".join(words)
        for example in text.split("<end>")[:-1]:
            digits, answer = example.split("=")
            assert tuple(answer.split()) == nb.english(tuple(digits.split()))


def test_the_causal_mask_hides_later_tokens_and_no_mask_does_not():
    torch.manual_seed(0)
    model = peeking.TinyDecoder().eval()
    tokens = torch.tensor([nb.ids(["3", "1", "4", "=", "three", "one"])])
    changed = tokens.clone()
    changed[0, 5] = nb.INDEX["two"]
    with torch.no_grad():
        for causal, same in ((True, True), (False, False)):
            before, after = model(tokens, causal), model(changed, causal)
            assert torch.allclose(before[0, :5], after[0, :5], atol=1e-6) is same


def test_the_digit_floor_is_ln_9_over_the_digits_share_of_next_tokens():
    assert peeking.digit_floor() == pytest.approx(math.log(9))
    rows = peeking.packed(nb.split()[1], 400, torch.Generator().manual_seed(nb.HELD_OUT_SEED))
    next_words = [nb.WORDS[i] for row in rows for i in row[1:]]
    share = sum(w in nb.DIGITS for w in next_words) / len(next_words)
    assert peeking.digit_share() == pytest.approx(share)
    # a whole example of k digits has 2k + 3 tokens; rows cut mid-example, mostly in the digits
    assert 4 / 11 < share < 0.45


def test_nat_decodes_in_one_pass_and_at_in_one_pass_per_word():
    torch.manual_seed(0)
    sources = [("3", "1"), ("9", "9", "9", "9")]
    at = nat.decode(nat.Translator(True).eval(), sources)
    parallel = nat.decode(nat.Translator(False).eval(), sources)
    assert parallel.passes == [1, 1] and all(1 <= p <= nat.MAX_TARGET + 1 for p in at.passes)
    assert np.allclose(parallel.word_probs.sum(-1), 1, atol=1e-5)
    assert np.allclose(parallel.length_probs.sum(-1), 1, atol=1e-5) and parallel.length_probs[:, 0].max() == 0
    assert nat.verdict("three one and four", ("3", "1", "4")) == "English"
    assert nat.verdict("trois un quatre", ("3", "1", "4")) == "French"
    assert nat.verdict("three un and quatre", ("3", "1", "4")) == "neither"


def test_relatedness_gold_scores_follow_the_rule():
    assert sum(rel.WEIGHTS.values()) == pytest.approx(1)
    pairs = rel.generate(400, seed=3)
    allowed = {round(5 * sum(w * a for w, a in zip(rel.WEIGHTS.values(), agree, strict=True)), 3)
               for agree in np.array(np.meshgrid(*[[0, 0.5, 0.6, 1]] * 4)).T.reshape(-1, 4)}  # fmt: skip
    assert {p.score for p in pairs} <= allowed
    for p in pairs:  # the same sentence but for its article is the same meaning
        if p.first.split()[1:] == p.second.split()[1:]:
            assert p.score == 5
    assert min(p.score for p in pairs) < 1 and max(p.score for p in pairs) == 5


def test_word_overlap_and_errors_against_their_formulas():
    pair = rel.ScoredPair("a man is running in the park", "the guy is running", 5.0)
    assert rel.overlap(pair) == pytest.approx(1 / 4)  # {running} of {man, running, park, guy}
    rng = np.random.default_rng(0)
    gold, predicted = rng.uniform(0, 5, 50), rng.uniform(0, 5, 50)
    e = rel.errors(predicted, gold)
    assert e["rmse"] == pytest.approx(np.sqrt(np.mean((predicted - gold) ** 2)), abs=1e-4)
    assert e["mae"] == pytest.approx(np.mean(np.abs(predicted - gold)), abs=1e-4)
    assert e["pearson"] == pytest.approx(pearsonr(predicted, gold)[0], abs=1e-4)
    assert rel.errors(np.full(50, 2.5), gold)["pearson"] == 0


def test_a_digit_reader_keeps_separate_source_target_and_output_tables():
    torch.manual_seed(0)
    reader = nat.Translator(autoregressive=False)
    rows = {row["table"]: row for row in nat.embedding_rows(reader)}
    d, v = nat.NatConfig().d_model, len(nb.WORDS)
    assert [row["rows x columns"] for row in rows.values()] == [f"{v} x {d}"] * 3
    assert all(row["weights"] == v * d and row["shared with"] == "none" for row in rows.values())
    assert not torch.equal(reader.source_embed.token.weight, reader.target_embed.token.weight)
    # Tied, as the 2017 Transformer ties them, the rows say so.
    reader.target_embed.token.weight = reader.source_embed.token.weight
    tied = {row["table"]: row["shared with"] for row in nat.embedding_rows(reader)}
    assert tied["source (encoder input)"] == "target (decoder input)"
