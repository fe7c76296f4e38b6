"""Coreference: the pair set, token spans, pronoun-to-candidate attention and head scoring."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace

import numpy as np
import pytest
from conftest import plotly_array

from txviz.coref.answers import (
    ModelAnswer,
    compare_over_set,
    head_readings,
    substituted,
    verdicts,
)
from txviz.coref.pairs import (
    PAIRS_PATH,
    CorefInputError,
    load_kinds,
    load_pairs,
    make_pair,
    pairs_of_kind,
    split_words,
)
from txviz.coref.runs import trace_pair
from txviz.coref.scoring import (
    assign_folds,
    coin_flip_band,
    cross_validate,
    cv_by_kind,
    pair_credit,
    pair_margin,
    seed_stability,
    sentence_credit,
)
from txviz.coref.spans import (
    PairAttention,
    TokenSpans,
    candidate_attention,
    hidden_candidates,
    token_spans,
    word_token_positions,
)

ANIMAL_A = "The animal didn't cross the street because it was too tired."
ANIMAL_B = "The animal didn't cross the street because it was too wide."
SPANS = TokenSpans(pronoun=(5,), candidates=((1, 2), (4,)))


def test_pair_set_is_large_and_starts_with_the_animal_pair():
    pairs = load_pairs()
    assert len(pairs) >= 120
    first = pairs[0]
    assert (first.sentence_a, first.sentence_b) == (ANIMAL_A, ANIMAL_B)
    assert first.candidate_texts == ("animal", "street")
    assert (first.answer_a, first.answer_b) == (0, 1)


def test_every_pair_is_a_well_formed_minimal_pair():
    raw = json.loads(PAIRS_PATH.read_text(encoding="utf-8"))["pairs"]
    sentences = set()
    for entry, pair in zip(raw, load_pairs(), strict=True):
        words_a = [w.text.lower() for w in pair.words_a]
        words_b = [w.text.lower() for w in pair.words_b]
        assert len(words_a) == len(words_b), entry
        assert sum(x != y for x, y in zip(words_a, words_b, strict=True)) == 1, entry
        # pronoun and candidates are words of both sentences, exactly once
        for word in (entry["pronoun"], *entry["candidates"]):
            assert words_a.count(word.lower()) == 1, (word, entry["a"])
            assert words_b.count(word.lower()) == 1, (word, entry["b"])
        # the answer flips between A and B and is one of the candidates
        assert entry["answer_a"] in entry["candidates"] and entry["answer_b"] in entry["candidates"]
        assert entry["answer_a"] != entry["answer_b"]
        # both candidates come before the pronoun, so a decoder can attend to them too
        assert max(pair.candidates) < pair.pronoun
        sentences.update((entry["a"], entry["b"]))
    assert len(sentences) == 2 * len(raw)  # no pair repeated


def test_every_pair_has_a_kind_and_every_kind_is_large_enough_to_score():
    pairs, kinds = load_pairs(), load_kinds()
    assert {"size", "animacy", "people", "cause/effect"} <= set(kinds)
    assert {p.kind for p in pairs} == set(kinds)  # no pair without a described kind, no empty kind
    for kind in kinds:
        chosen = pairs_of_kind(pairs, kind)
        assert len(chosen) >= 15, kind
        assert all(pairs[i].kind == kind for i in chosen)
    assert pairs_of_kind(pairs, None) == tuple(range(len(pairs)))
    # a raw entry goes through make_pair with its kind
    entry = json.loads(PAIRS_PATH.read_text(encoding="utf-8"))["pairs"][-1]
    rebuilt = make_pair(
        entry["a"],
        entry["b"],
        entry["pronoun"],
        entry["candidates"],
        *[entry[k] for k in ("answer_a", "answer_b", "kind")],
    )
    assert rebuilt == pairs[-1]


def test_answers_are_not_always_the_first_candidate():
    # otherwise "attend to the first-mentioned noun in A" would look like coreference
    answers = [p.answer_a for p in load_pairs()]
    assert 0.2 < np.mean(answers) < 0.8


def test_pronoun_not_in_sentence_is_a_clear_message():
    with pytest.raises(CorefInputError, match="'she' is not a word"):
        make_pair(ANIMAL_A, ANIMAL_B, "she", ("animal", "street"))


def test_sentences_of_different_lengths_are_a_clear_message():
    with pytest.raises(CorefInputError, match="same number of words"):
        make_pair(ANIMAL_A, ANIMAL_B.replace("too wide", "wide"), "it", ("animal", "street"))


def test_more_than_one_changed_word_is_a_clear_message():
    b = ANIMAL_B.replace("animal", "horse")
    with pytest.raises(CorefInputError, match="differs in one word"):
        make_pair(ANIMAL_A, b, "it", ("cross", "street"))


def test_identical_sentences_and_repeated_marks_are_clear_messages():
    with pytest.raises(CorefInputError, match="the same"):
        make_pair(ANIMAL_A, ANIMAL_A, "it", ("animal", "street"))
    with pytest.raises(CorefInputError, match="three different words"):
        make_pair(ANIMAL_A, ANIMAL_B, "it", ("animal", "animal"))
    with pytest.raises(CorefInputError, match="occurs 2 times"):
        make_pair(ANIMAL_A, ANIMAL_B, "it", ("The", "street"))
    with pytest.raises(CorefInputError, match="Write both"):
        make_pair("", "", "it", ("animal", "street"))


def test_marks_by_word_index_match_marks_by_text():
    by_text = make_pair(ANIMAL_A, ANIMAL_B, "it", ("animal", "street"), "animal", "street")
    words = [w.text for w in split_words(ANIMAL_A)]
    by_index = make_pair(ANIMAL_A, ANIMAL_B, words.index("it"), (1, words.index("street")), 0, 1)
    assert by_text == by_index
    assert words[:3] == ["The", "animal", "didn't"]  # apostrophes stay inside a word


def test_candidate_spans_cover_every_sub_word_piece():
    text = "The trophy didn't fit because it was big."
    # WordPiece-like pieces with offsets: [CLS] the tro ##phy didn ' t fit because it was big . [SEP]
    pieces = [
        "[CLS]",
        "The",
        "tro",
        "phy",
        "didn",
        "'",
        "t",
        "fit",
        "because",
        "it",
        "was",
        "big",
    ]
    pieces += [".", "[SEP]"]
    offsets, cursor = [(0, 0)], 0
    for piece in pieces[1:-1]:
        start = text.index(piece, cursor)
        offsets.append((start, start + len(piece)))
        cursor = start + len(piece)
    offsets.append((0, 0))
    words = [w.text for w in split_words(text)]
    spans = token_spans(text, offsets, words.index("it"), (1, words.index("didn't")))
    assert spans.candidates[0] == (2, 3)  # "trophy" is both its pieces
    assert spans.candidates[1] == (4, 5, 6)  # "didn't" is three pieces
    assert spans.pronoun == (9,)


def test_spans_accept_offsets_that_include_the_leading_space():
    text = "The animal sat"
    # byte-level BPE tokenizers may put the space inside the token: " animal" = (3, 10)
    offsets = [(0, 3), (3, 10), (10, 14)]
    assert word_token_positions(offsets, split_words(text)[1]) == (1,)
    assert word_token_positions(offsets, split_words(text)[2]) == (2,)


def test_word_missing_from_truncated_input_is_a_clear_message():
    text = "The animal sat because it was tired"
    offsets = [(0, 3), (4, 10)]  # cut after "animal"
    with pytest.raises(CorefInputError, match="no tokens"):
        token_spans(text, offsets, 4, (1, 2))


def _hand_made_weights() -> np.ndarray:
    """[layer=2, head=2, 6, 6] rows sum to 1, with known mass on positions 1-2 and 4."""
    w = np.full((2, 2, 6, 6), 0.0, dtype=np.float32)
    w[..., 0] = 1.0  # every row not set below looks at position 0
    # the pronoun sits at position 5; candidate 0 = pieces (1, 2), candidate 1 = (4,)
    w[0, 0, 5] = [0.1, 0.3, 0.2, 0.0, 0.1, 0.3]  # 0.5 vs 0.1 -> first candidate
    w[0, 1, 5] = [0.2, 0.0, 0.1, 0.0, 0.6, 0.1]  # 0.1 vs 0.6 -> second
    w[1, 0, 5] = [0.4, 0.1, 0.1, 0.0, 0.2, 0.2]  # 0.2 vs 0.2 -> tie
    w[1, 1, 5] = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # 0 vs 0 -> tie
    return w


def test_candidate_attention_sums_pieces_on_a_hand_made_trace():
    shares = candidate_attention(_hand_made_weights(), SPANS)
    assert shares.shape == (2, 2, 2)
    np.testing.assert_allclose(shares[0, 0], [0.5, 0.1], atol=1e-6)
    np.testing.assert_allclose(shares[0, 1], [0.1, 0.6], atol=1e-6)
    np.testing.assert_allclose(shares[1, 0], [0.2, 0.2], atol=1e-6)
    np.testing.assert_allclose(shares[1, 1], [0.0, 0.0], atol=1e-6)


def test_a_pronoun_in_pieces_averages_its_rows():
    w = _hand_made_weights()
    spans = TokenSpans(pronoun=(3, 5), candidates=((1, 2), (4,)))
    w[0, 0, 3] = [
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        0.0,
    ]  # the first piece looks only at candidate 1
    shares = candidate_attention(w, spans)
    np.testing.assert_allclose(shares[0, 0], [(0.0 + 0.5) / 2, (1.0 + 0.1) / 2], atol=1e-6)


def test_credit_counts_ties_as_half():
    shares = candidate_attention(_hand_made_weights(), SPANS)
    np.testing.assert_array_equal(sentence_credit(shares, answer=0), [[1, 0], [0.5, 0.5]])
    np.testing.assert_array_equal(sentence_credit(shares, answer=1), [[0, 1], [0.5, 0.5]])


def test_lean_and_difference_grids():
    a = candidate_attention(_hand_made_weights(), SPANS)
    b = a[..., ::-1].copy()  # sentence B: the same heads with the candidates swapped
    pa = PairAttention(a, b, ("animal", "street"), answer_a=0, answer_b=1)
    np.testing.assert_allclose(pa.lean_a, [[0.4, -0.5], [0.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(pa.difference, [[0.8, -1.0], [0.0, 0.0]], atol=1e-6)
    # head (0, 0) is right in both sentences, head (0, 1) wrong in both
    np.testing.assert_allclose(pair_credit(pa), [[1, 0], [0.5, 0.5]])
    np.testing.assert_allclose(pair_margin(pa), [[0.4, -0.5], [0, 0]], atol=1e-6)


def test_decoder_cannot_see_a_candidate_after_the_pronoun():
    spans = TokenSpans(pronoun=(3,), candidates=((1,), (5, 6)))
    assert hidden_candidates(spans, causal=True) == (1,)
    assert hidden_candidates(spans, causal=False) == ()


@pytest.mark.parametrize("n_pairs", [2, 7, 38, 135])
@pytest.mark.parametrize("k", [2, 5, 10])
@pytest.mark.parametrize("seed", [0, 1])
def test_folds_never_split_a_pair_and_hold_out_every_pair_once(n_pairs, k, seed):
    folds = assign_folds(n_pairs, k, seed)
    assert len(folds) == min(k, n_pairs)
    held_out = [i for fold in folds for i in fold]
    assert sorted(held_out) == list(range(n_pairs))  # each pair in exactly one fold
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 1
    assert assign_folds(n_pairs, k, seed) == folds  # seeded: repeatable


def test_folds_depend_on_the_seed_and_need_two_pairs():
    assert assign_folds(38, 5, seed=0) != assign_folds(38, 5, seed=1)
    with pytest.raises(CorefInputError, match="at least two pairs"):
        assign_folds(1)


def _planted_set(n_pairs: int, rng: np.random.Generator) -> list[PairAttention]:
    """Head (1, 2) always follows the answer; head (0, 0) always looks at candidate 0."""
    out = []
    for i in range(n_pairs):
        answer_a = i % 2
        a = rng.uniform(0, 0.4, size=(2, 3, 2))
        b = rng.uniform(0, 0.4, size=(2, 3, 2))
        a[1, 2] = [0.9, 0.1] if answer_a == 0 else [0.1, 0.9]
        b[1, 2] = a[1, 2, ::-1]
        a[0, 0] = b[0, 0] = [0.8, 0.1]
        out.append(PairAttention(a, b, ("x", "y"), answer_a, 1 - answer_a))
    return out


def test_cross_validation_finds_the_planted_head_in_every_fold():
    cv = cross_validate(_planted_set(40, np.random.default_rng(0)), k=5, seed=3)
    assert cv.best_head == (1, 2) and cv.fold_heads == ((1, 2),) * 5
    assert cv.choice_counts == (((1, 2), 5),)
    assert cv.held_out_accuracy == cv.mean_fold_accuracy == 1.0 and cv.fold_spread == 0.0
    assert cv.accuracy[0, 0] == 0.5  # a fixed preference is exactly chance
    assert cv.n_pairs == 40 and cv.n_sentences == 80 and cv.k == 5
    assert cv.coin_flip_band == coin_flip_band(80) and cv.beats_chance
    assert cv.ranked_heads(1) == [(1, 2)]


def test_each_fold_chooses_on_the_other_folds_only_and_tests_on_its_own():
    pairs = _planted_set(12, np.random.default_rng(1))
    for pa in pairs:  # no planted head: every head is noise
        pa.to_candidates_a[1, 2] = np.random.default_rng(len(pairs)).uniform(0, 0.4, 2)
    folds = assign_folds(12, 4, seed=5)
    for i in folds[0]:  # head (0, 1) perfect on fold 0's pairs only
        pa = pairs[i]
        pa.to_candidates_a[0, 1] = [1.0, 0.0] if pa.answer_a == 0 else [0.0, 1.0]
        pa.to_candidates_b[0, 1] = pa.to_candidates_a[0, 1, ::-1]
    cv = cross_validate(pairs, k=4, seed=5)
    assert cv.folds == folds
    credit = np.stack([pair_credit(pa) for pa in pairs])
    margin = np.stack([pair_margin(pa) for pa in pairs])
    for fold, head, accuracy in zip(cv.folds, cv.fold_heads, cv.fold_accuracy, strict=True):
        train = [i for i in range(12) if i not in fold]
        mean_credit, mean_margin = credit[train].mean(0), margin[train].mean(0)
        best = mean_credit.max()
        tied = [h for h in np.argwhere(mean_credit == best)]
        expected = max(tied, key=lambda h: mean_margin[tuple(h)])  # ties go to the larger margin
        assert head == tuple(expected)
        assert accuracy == pytest.approx(credit[list(fold), head[0], head[1]].mean())
    # fold 0 could not see the pairs where (0, 1) is perfect, so it did not choose it for them
    assert cv.fold_heads[0] != (0, 1)
    sizes = np.array([len(f) for f in cv.folds])
    assert cv.held_out_accuracy == pytest.approx((cv.fold_accuracy * sizes).sum() / 12)
    assert cv.fold_spread == pytest.approx(np.std(cv.fold_accuracy, ddof=1))


def test_noise_heads_look_good_where_chosen_and_are_coin_flips_held_out():
    held_out, chosen_on = [], []
    for seed in range(20):  # 20 sets of 100 pairs where every head is noise
        rng = np.random.default_rng(seed)
        pairs = [
            PairAttention(
                rng.uniform(size=(6, 12, 2)), rng.uniform(size=(6, 12, 2)), ("x", "y"), i % 2, 1 - i % 2
            )
            for i in range(100)
        ]
        cv = cross_validate(pairs, k=5, seed=0)
        held_out.append(cv.held_out_accuracy)
        chosen_on.append(cv.best_accuracy)
    # the best of 72 noise heads always looks better than chance on the pairs that chose it ...
    assert min(chosen_on) >= 0.55
    # ... and held out it is a coin flip: mean 50% within 3 standard errors of 20 sets of 200 sentences
    # (0.024; 2 would reject a right implementation one time in 20, while choosing on the held-out
    # pairs too would put the mean near the in-sample 55%+)
    assert abs(np.mean(held_out) - 0.5) < 3 * 0.5 / np.sqrt(200 * 20)
    low, high = coin_flip_band(200)
    assert np.mean([low <= a <= high for a in held_out]) >= 0.85


def test_all_tied_heads_are_reported_as_a_tie():
    pairs = _planted_set(10, np.random.default_rng(0))
    assert not cross_validate(pairs).all_tied
    for pa in pairs:  # a decoder's pronoun before the deciding word: the same row in A and B
        pa.to_candidates_b[...] = pa.to_candidates_a
    cv = cross_validate(pairs)
    assert cv.all_tied and (cv.accuracy == 0.5).all() and cv.held_out_accuracy == 0.5


def test_cv_by_kind_scores_each_kind_on_its_own_pairs():
    pas = _planted_set(12, np.random.default_rng(0))
    for pa in pas[6:]:  # on the second kind the planted head is always wrong
        pa.to_candidates_a[1, 2] = pa.to_candidates_a[1, 2, ::-1].copy()
        pa.to_candidates_b[1, 2] = pa.to_candidates_b[1, 2, ::-1].copy()
    base = load_pairs()[0]
    kinds = [replace(base, kind="good" if i < 6 else "bad") for i in range(12)]
    rows = cv_by_kind(pas, kinds, k=3, seed=0)
    assert [r["kind"] for r in rows] == ["all kinds", "good", "bad"]
    assert [r["pairs"] for r in rows] == [12, 6, 6]
    good = cross_validate(pas[:6], 3, 0)
    assert rows[1]["head chosen on all"] == "L1 H2" and rows[1]["beats chance"] == "yes"
    assert rows[1]["cross-validated"] == f"{good.held_out_accuracy:.1%} ± {good.fold_spread:.1%}"
    assert rows[2]["head chosen on all"] != "L1 H2"


def test_seed_stability_reports_each_seed():
    pairs = _planted_set(20, np.random.default_rng(0))
    stability = seed_stability(pairs, k=5, seeds=range(3))
    assert stability.seeds == (0, 1, 2)
    assert stability.accuracies == (1.0, 1.0, 1.0) and stability.top_heads == ((1, 2),) * 3
    assert "100.0% to 100.0%" in stability.sentence and "L1 H2" in stability.sentence
    assert "in 3 of them" in stability.sentence


def test_scoring_needs_answers():
    a = np.zeros((1, 1, 2))
    with pytest.raises(CorefInputError, match="right answer"):
        pair_credit(PairAttention(a, a, ("x", "y")))


def test_coin_flip_band_matches_the_binomial():
    low, high = coin_flip_band(20)
    below = sum(math.comb(20, k) for k in range(round(low * 20))) / 2**20
    assert below <= 0.025 < below + math.comb(20, round(low * 20)) / 2**20
    assert high == pytest.approx(1 - low)


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_coin_flip_band_equals_the_exact_binomial_sums(level):
    """scipy's quantiles against exact counting: the fewest right answers reaching each tail."""
    tail = (1 - level) / 2
    for n in range(1, 301):
        counts = list(itertools.accumulate(math.comb(n, k) for k in range(n + 1)))  # exact integers
        low = next(k for k, c in enumerate(counts) if c / 2**n >= tail)
        high = next(k for k, c in enumerate(counts) if c / 2**n >= 1 - tail)
        assert coin_flip_band(n, level) == (low / n, high / n), n


def _trace(weights: np.ndarray, tokens: tuple[str, ...]):
    from txviz.core.trace import AttentionTrace

    return AttentionTrace(tokens, tokens, weights, "hand-made", "self")


def test_head_grids_carry_lean_a_lean_b_and_difference():
    from txviz.coref.figures import head_grids

    a = candidate_attention(_hand_made_weights(), SPANS)
    pa = PairAttention(a, a[..., ::-1].copy(), ("animal", "street"), 0, 1)
    grids = [chart.to_dict() for chart in head_grids(pa, selected=(0, 1))]
    assert len(grids) == 3
    for spec, expected in zip(grids, (pa.lean_a, pa.lean_b, pa.difference), strict=True):
        cells, outline = spec["layer"]
        rows = spec["datasets"][cells["data"]["name"]]
        got = np.zeros_like(expected)
        for row in rows:
            got[row["layer"], row["head"]] = row["value"]
        np.testing.assert_allclose(got, expected)
        scale = cells["encoding"]["color"]["scale"]
        assert scale["domainMid"] == 0 and scale["domain"][0] == -scale["domain"][1]  # white at zero
        assert spec["datasets"][outline["data"]["name"]] == [{"layer": 0, "head": 1}]  # the chosen head
    assert (
        grids[0]["layer"][0]["encoding"]["color"]["scale"]["domain"]
        == (grids[1]["layer"][0]["encoding"]["color"]["scale"]["domain"])
    )  # one scale for the two sentences


def test_pair_heatmaps_show_one_head_of_each_sentence_with_token_ticks():
    from txviz.coref.figures import pair_heatmaps

    tokens = (
        "[CLS]",
        "the",
        "the",
        "x",
        "y",
        "it",
    )  # repeated tokens stay on their own rows
    w_a = _hand_made_weights()
    w_b = w_a[:, ::-1].copy()  # B: heads swapped, so the panels must differ
    fig = pair_heatmaps(_trace(w_a, tokens), _trace(w_b, tokens), 0, 1, SPANS, SPANS)
    data = fig.to_dict()
    left, right = (t for t in data["data"] if t["type"] == "heatmap")
    np.testing.assert_allclose(plotly_array(left["z"]), w_a[0, 1])
    np.testing.assert_allclose(plotly_array(right["z"]), w_b[0, 1])
    assert list(plotly_array(left["y"])) == list(range(6))
    assert list(data["layout"]["xaxis"]["ticktext"]) == list(tokens)
    assert data["layout"]["yaxis"]["autorange"] == "reversed"  # rows are queries, top first
    assert "key" in data["layout"]["xaxis"]["title"]["text"]


def test_cv_chart_shows_each_fold_and_the_best_heads_with_chance_and_bands():
    from txviz.coref.figures import cv_chart

    cv = cross_validate(_planted_set(40, np.random.default_rng(0)), k=4, seed=3)
    data = cv_chart(cv, top=4).to_dict()
    folds, heads = data["data"]
    assert list(folds["x"]) == [f"fold {i}<br>L1 H2" for i in range(1, 5)]
    np.testing.assert_allclose(plotly_array(folds["y"]), cv.fold_accuracy)
    assert heads["x"][0] == "L1 H2" and heads["text"][0] == "4/4"
    assert plotly_array(heads["y"])[0] == cv.accuracy[1, 2] == 1.0
    shapes = data["layout"]["shapes"]
    chance = [s for s in shapes if s["type"] == "line" and s["y0"] == 0.5]
    assert len(chance) == 2  # a chance line in both panels
    bands = [(s["y0"], s["y1"]) for s in shapes if s["type"] == "rect"]
    assert coin_flip_band(80) in bands and coin_flip_band(20) in bands  # all sentences; one fold's


def test_substitution_puts_the_candidate_in_place_of_the_pronoun():
    pair = load_pairs()[0]
    text, rest = substituted(pair.sentence_a, pair.pronoun, "animal")
    assert text == "The animal didn't cross the street because the animal was too tired."
    assert text[rest:] == " was too tired."
    assert substituted("Anna thanked Maria because she had offered help.", 4, "Maria")[0] == (
        "Anna thanked Maria because Maria had offered help."
    )


def test_verdicts_and_set_comparison_on_hand_made_answers():
    a = candidate_attention(_hand_made_weights(), SPANS)
    pa = PairAttention(a, a[..., ::-1].copy(), ("animal", "street"), 0, 1)
    says_animal = ModelAnswer("A.", ("animal", "street"), (-1.0, -3.0))
    says_street = ModelAnswer("B.", ("animal", "street"), (-4.0, -2.0))
    assert says_animal.probabilities[0] == pytest.approx(1 / (1 + math.exp(-2)))
    found = verdicts([pa], [(says_animal, says_animal)], head=(0, 0))
    assert [(v.attention_pick, v.model_pick, v.right) for v in found] == [
        ("animal", "animal", "animal"),
        ("street", "animal", "street"),
    ]
    assert found[1].describe((0, 0)) == (
        "the model prefers **animal** (wrong); head L0 H0 looks more at **street** (they disagree)."
    )
    summary = compare_over_set([pa], [(says_animal, says_street)], head=(1, 1))
    assert summary.model_accuracy == 1.0
    assert summary.head_accuracy == 0.5  # ties on both sentences count half
    assert summary.agreement == 0.0 and len(summary.rows) == 2


def test_a_tokenizer_without_offsets_is_a_clear_message():
    from types import SimpleNamespace

    from txviz.models import LoadedModel

    class SlowTokenizer:
        model_max_length = 512

        def __call__(self, text, **kwargs):
            raise NotImplementedError("return_offset_mapping is not available for Python tokenizers")

    model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=512))
    loaded = LoadedModel("slow", "encoder", model, SlowTokenizer(), None, "cpu")
    with pytest.raises(CorefInputError, match="no character offsets"):
        trace_pair(loaded, load_pairs()[0])


def test_answer_chart_has_one_bar_per_candidate_and_sentence():
    from txviz.coref.figures import answer_chart

    probs = [(0.8, 0.2), (0.3, 0.7)]
    bars = answer_chart(("animal", "street"), probs, ["A", "B"]).to_dict()["data"]
    assert [b["name"] for b in bars] == ["animal", "street"]
    np.testing.assert_allclose(plotly_array(bars[0]["y"]), [0.8, 0.3])
    np.testing.assert_allclose(plotly_array(bars[1]["y"]), [0.2, 0.7])
    assert list(bars[0]["x"]) == ["A", "B"]


def test_head_readings_say_whether_a_head_looks_at_the_right_candidate():
    a = candidate_attention(_hand_made_weights(), SPANS)
    pa = PairAttention(a, a[..., ::-1].copy(), ("animal", "street"), 0, 0)
    assert head_readings(pa, (0, 0)) == [
        "Sentence A: head L0 H0 looks more at **animal** (right: the pronoun means animal).",
        "Sentence B: head L0 H0 looks more at **street** (wrong: the pronoun means animal).",
    ]
    assert head_readings(pa, (1, 1))[0].endswith("the same (a tie; the pronoun means animal).")
    unmarked = PairAttention(a, a, ("animal", "street"))
    assert head_readings(unmarked, (0, 0))[1].endswith("(no right answer marked).")
