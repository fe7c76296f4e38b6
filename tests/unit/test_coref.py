"""Coreference: the pair set, token spans, pronoun-to-candidate attention and head scoring."""

from __future__ import annotations

import json
import math

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
from txviz.coref.pairs import PAIRS_PATH, CorefInputError, load_pairs, make_pair, split_words
from txviz.coref.runs import trace_pair
from txviz.coref.scoring import (
    coin_flip_band,
    pair_credit,
    pair_margin,
    score_heads,
    sentence_credit,
    split_pairs,
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
    assert len(pairs) >= 30
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


@pytest.mark.parametrize("n_pairs", [2, 7, 38, 100])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_split_never_overlaps_and_covers_every_pair(n_pairs, seed):
    choose, test = split_pairs(n_pairs, test_fraction=0.3, seed=seed)
    assert not set(choose) & set(test)
    assert sorted(choose + test) == list(range(n_pairs))
    assert choose and test
    assert split_pairs(n_pairs, 0.3, seed) == (choose, test)  # seeded: repeatable


def test_split_depends_on_the_seed_and_needs_two_pairs():
    assert split_pairs(38, seed=0) != split_pairs(38, seed=1)
    with pytest.raises(CorefInputError, match="at least two pairs"):
        split_pairs(1)


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


def test_score_heads_finds_the_planted_head_and_reports_held_out_accuracy():
    scores = score_heads(_planted_set(40, np.random.default_rng(0)), seed=3)
    assert scores.best_head == (1, 2)
    assert scores.best_test_accuracy == 1.0
    assert scores.choose_accuracy[0, 0] == 0.5  # a fixed preference is exactly chance
    assert scores.test_accuracy[0, 0] == 0.5
    assert scores.chance == 0.5
    assert scores.n_test_sentences == 2 * len(scores.test_pairs) == 24
    assert scores.ranked_heads(1) == [(1, 2)]


def test_score_heads_uses_only_the_choosing_pairs_to_choose():
    pairs = _planted_set(10, np.random.default_rng(1))
    choose, test = split_pairs(10, 0.3, seed=5)
    for i in test:  # make head (0, 1) perfect on the held-out pairs only
        pa = pairs[i]
        pa.to_candidates_a[0, 1] = [1.0, 0.0] if pa.answer_a == 0 else [0.0, 1.0]
        pa.to_candidates_b[0, 1] = pa.to_candidates_a[0, 1, ::-1]
    scores = score_heads(pairs, 0.3, seed=5)
    assert scores.test_pairs == test
    expected = np.mean([pair_credit(pairs[i]) for i in choose], axis=0)
    np.testing.assert_allclose(scores.choose_accuracy, expected)
    assert scores.test_accuracy[0, 1] == 1.0
    assert scores.best_head == (1, 2)


def test_scoring_needs_answers():
    a = np.zeros((1, 1, 2))
    with pytest.raises(CorefInputError, match="right answer"):
        pair_credit(PairAttention(a, a, ("x", "y")))


def test_coin_flip_band_matches_the_binomial():
    low, high = coin_flip_band(20)
    below = sum(math.comb(20, k) for k in range(round(low * 20))) / 2**20
    assert below <= 0.025 < below + math.comb(20, round(low * 20)) / 2**20
    assert high == pytest.approx(1 - low)


def _trace(weights: np.ndarray, tokens: tuple[str, ...]):
    from txviz.core.trace import AttentionTrace

    return AttentionTrace(tokens, tokens, weights, "hand-made", "self")


def test_head_grids_carry_lean_a_lean_b_and_difference():
    from txviz.coref.figures import head_grids

    a = candidate_attention(_hand_made_weights(), SPANS)
    pa = PairAttention(a, a[..., ::-1].copy(), ("animal", "street"), 0, 1)
    data = head_grids(pa, selected=(0, 1)).to_dict()
    heatmaps = [t for t in data["data"] if t["type"] == "heatmap"]
    assert len(heatmaps) == 3
    np.testing.assert_allclose(plotly_array(heatmaps[0]["z"]), pa.lean_a)
    np.testing.assert_allclose(plotly_array(heatmaps[1]["z"]), pa.lean_b)
    np.testing.assert_allclose(plotly_array(heatmaps[2]["z"]), pa.difference)
    assert heatmaps[2]["zmid"] == 0 and heatmaps[2]["zmin"] == -heatmaps[2]["zmax"]
    # the chosen head is outlined once in each grid
    rects = [s for s in data["layout"]["shapes"] if s["type"] == "rect"]
    assert len(rects) == 3 and rects[0]["x0"] == 0.5 and rects[0]["y0"] == -0.5


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


def test_head_score_chart_shows_chance_and_held_out_bars():
    from txviz.coref.figures import head_score_chart

    scores = score_heads(_planted_set(40, np.random.default_rng(0)), seed=3)
    data = head_score_chart(scores, top=4).to_dict()
    choosing, held_out = data["data"]
    assert choosing["x"][0] == "L1 H2"
    assert plotly_array(held_out["y"])[0] == scores.best_test_accuracy == 1.0
    lines = [s for s in data["layout"]["shapes"] if s["type"] == "line"]
    assert lines[0]["y0"] == lines[0]["y1"] == 0.5


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
