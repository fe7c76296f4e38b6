"""BPE trainer: hand counts on the sailor rhyme, the whitespace rule, the tokenizers cross-check."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
from conftest import plotly_array

from txviz.bench import bpe as bench
from txviz.tokenization import bpe, figures


@pytest.fixture(scope="module")
def rhyme() -> bpe.BpeTrace:
    return bpe.train_bpe(bpe.SAILOR_RHYME, max_merges=None)


def naive_bpe(text: str, n_merges: int) -> list[tuple[tuple[str, str], dict[str, int]]]:
    """Textbook BPE on the raw character stream, recounting everything at every step."""
    tokens = list(bpe.normalize_corpus(text))
    ids = {token: i for i, token in enumerate(sorted(set(tokens)))}
    history = []
    for _ in range(n_merges):
        pairs = Counter(
            (a, b)
            for a, b in pairwise(tokens)
            if not a[-1].isspace()  # the textbook rule
        )
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], -ids[p[0]], -ids[p[1]]))
        merged, i = [], 0
        while i < len(tokens):
            if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == best:
                merged.append(tokens[i] + tokens[i + 1])
                i += 2
            else:
                merged.append(tokens[i])
                i += 1
        tokens = merged
        ids.setdefault(best[0] + best[1], len(ids))
        history.append((best, dict(Counter(tokens))))
    return history


def test_rhyme_character_counts_by_hand(rhyme: bpe.BpeTrace) -> None:
    counts = rhyme.counts_at(0)
    # 33 words, each followed by a space or a line end.
    assert counts[" "] == 33
    # e: sea x6, see x7 (two each), went, he x2, the x2, deep (two), blue.
    assert counts["e"] == 6 + 14 + 1 + 2 + 2 + 2 + 1 == 28
    # s: sea x6, see x7, sailor, was.
    assert counts["s"] == 6 + 7 + 1 + 1 == 15
    assert sum(counts.values()) == len(bpe.SAILOR_RHYME)
    assert rhyme.alphabet == tuple(sorted(set(bpe.normalize_corpus(bpe.SAILOR_RHYME))))


def test_rhyme_first_merges_by_hand(rhyme: bpe.BpeTrace) -> None:
    first, second, third, fourth = rhyme.steps[:4]
    # 1: "se" in sea x6 and see x7 = 13; s keeps sailor and was, e loses 13.
    assert first.pair == ("s", "e") and first.pair_count == 13
    assert dict(first.changed_counts) == {"s": 2, "e": 15, "se": 13}
    # 2: "e_" in see x7, he x2, the x2, blue = 12 (the textbook's second merge).
    assert second.pair == ("e", " ") and second.pair_count == 12
    assert dict(second.changed_counts) == {"e": 3, " ": 21, "e ": 12}
    # 3 and 4: "a_" (sea_ x6 + a_) and "se"+"e_" (see_ x7) both count 7; the tie goes to the
    # pair with the smaller ids: a and _ are characters, se and e_ were made later.
    assert third.pair == ("a", " ") and third.pair_count == 7
    assert fourth.pair == ("se", "e ") and fourth.pair_count == 7
    assert rhyme.counts_at(4)["see "] == 7
    assert first.vocab_size == len(rhyme.alphabet) + 1


def test_counts_match_a_naive_recount_at_every_step(rhyme: bpe.BpeTrace) -> None:
    reference = naive_bpe(bpe.SAILOR_RHYME, rhyme.n_steps + 5)
    assert len(reference) == rhyme.n_steps  # both stop when every word is one token
    for step, (pair, counts) in zip(rhyme.steps, reference, strict=True):
        assert step.pair == pair
        assert rhyme.counts_at(step.index) == counts
        assert step.tokens_in_use == len(counts)
        assert step.corpus_tokens == sum(counts.values())


def test_whitespace_rule_no_merge_crosses_a_word(rhyme: bpe.BpeTrace) -> None:
    for left, _ in rhyme.merges:
        assert not left[-1].isspace()
    # Fully merged, the corpus is its words, each with the space after it.
    assert rhyme.counts_at(rhyme.n_steps) == Counter(word + " " for word in bpe.SAILOR_RHYME.split())
    assert rhyme.counts_at(rhyme.n_steps)["sea "] == 6


def test_whitespace_runs_follow_the_rule_on_the_raw_stream() -> None:
    text = "sea  sea\n\nsee\t\t sea sea  sea__see  "
    trace = bpe.train_bpe(text, max_merges=None)
    reference = naive_bpe(text, 100)
    assert trace.merges == [pair for pair, _ in reference]
    assert trace.counts_at(trace.n_steps) == reference[-1][1]
    assert all(" " not in token[:-1] for token in trace.counts_at(trace.n_steps))


def test_vocabulary_curve_rises_then_falls(rhyme: bpe.BpeTrace) -> None:
    curve = rhyme.tokens_in_use_curve()
    peak = int(np.argmax(curve))
    assert curve[0] == len(rhyme.alphabet) == 19
    assert curve[peak] > curve[0] and curve[-1] < curve[peak]
    assert curve[-1] == len(rhyme.word_counts) == 18  # one token per distinct word
    learned = rhyme.vocab_size_curve()
    assert learned == sorted(learned) and learned[-1] == 19 + rhyme.n_steps


@pytest.mark.parametrize(
    "text",
    [
        bpe.SAILOR_RHYME,
        "aaaaaaa",
        "aaa aaaa aa aaaaa abab ababab",
        "low lower lowest newer wider",
    ],
)
def test_merges_agree_with_tokenizers_trainer(text: str) -> None:
    for vocab_size in (len(set(bpe.normalize_corpus(text))) + k for k in (1, 5, 200)):
        ours = bpe.train_bpe(text, vocab_size=vocab_size).merges
        assert ours == bpe.tokenizers_merges(text, vocab_size)


def test_merges_agree_with_tokenizers_on_synthetic_text() -> None:
    text = bench.synthetic_corpus(30_000, seed=3)
    vocab_size = bpe.alphabet_size(text) + 300
    trace = bpe.train_bpe(text, vocab_size=vocab_size)
    assert trace.n_steps == 300
    assert trace.merges == bpe.tokenizers_merges(text, vocab_size)


def test_target_vocab_size_and_merge_limit_stop_training() -> None:
    trace = bpe.train_bpe(bpe.SAILOR_RHYME, vocab_size=25)
    assert trace.n_steps == 6 and trace.steps[-1].vocab_size == 25
    assert "target vocabulary" in trace.stop_reason
    assert bpe.train_bpe(bpe.SAILOR_RHYME, max_merges=3).n_steps == 3
    assert bpe.train_bpe(bpe.SAILOR_RHYME, vocab_size=5).n_steps == 0  # alphabet already bigger


def test_one_character_repeated_merges_doublings() -> None:
    trace = bpe.train_bpe("a" * 8)
    assert trace.merges == [("a", "a"), ("aa", "aa"), ("aaaa", "aaaa")]
    assert trace.steps[0].pair_count == 7 and trace.steps[0].merged == 4  # overlapping windows
    assert trace.counts_at(3) == {"aaaaaaaa": 1}
    assert bpe.train_bpe("a").n_steps == 0


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_corpus_is_a_clear_error(text: str) -> None:
    with pytest.raises(bpe.BpeInputError, match="empty"):
        bpe.train_bpe(text)


def test_bad_settings_and_huge_corpus_are_clear_errors() -> None:
    with pytest.raises(bpe.BpeInputError, match="at least 1"):
        bpe.train_bpe("sea", vocab_size=0)
    with pytest.raises(bpe.BpeInputError, match="1 MB"):
        bpe.train_bpe("sea " * 300_000)


def test_segment_follows_merge_ranks(rhyme: bpe.BpeTrace) -> None:
    stages = rhyme.segment("could ")
    ranks = [stage.rank for stage in stages]
    assert ranks == sorted(ranks)
    assert stages[-1].pieces == ("could ",)
    # Every corpus word ended in whitespace, so "could" alone never becomes one token.
    assert rhyme.segment("could")[-1].pieces == ("co", "u", "l", "d")
    for stage in stages:
        assert stage.pair == rhyme.merges[stage.rank]
    assert bpe.apply_merges(["x", "y"], {}) == []
    assert rhyme.segment("could ", upto=11)[-1].pieces == ("co", "u", "l", "d ")


def test_count_table_marks_the_new_token(rhyme: bpe.BpeTrace) -> None:
    rows = {row.token: row for row in bpe.count_table(rhyme, 5)}
    assert rows["sea_"].is_new and rows["sea_"].count == 6 and rows["sea_"].previous == 0
    assert rows["se"].count == 0 and rows["se"].previous == 6  # used up by this merge
    assert [row.token for row in bpe.count_table(rhyme, 0, top=3)] == ["_", "e", "s"]


def test_figures_carry_the_trace_numbers(rhyme: bpe.BpeTrace) -> None:
    heat = figures.step_heatmap(rhyme, step=5, max_tokens=200).to_dict()
    labels = heat["layout"]["yaxis"]["ticktext"]
    z = plotly_array(heat["data"][0]["z"]).astype(float)
    assert z.shape == (len(labels), rhyme.n_steps + 1)
    assert z[labels.index("se"), 1] == 13 and np.isnan(z[labels.index("se"), 0])
    curve = figures.vocab_curve(rhyme, step=5).to_dict()
    assert list(curve["data"][0]["y"]) == rhyme.tokens_in_use_curve()
    tree = figures.merge_tree(list("could "), rhyme.segment("could "), "could").to_dict()
    made = tree["data"][1]
    assert list(made["text"]) == ["co", "d_", "ld_", "uld_", "could_"]
    assert list(made["base"]) == [0, 4, 3, 2, 0]


def test_benchmark_runs_and_agrees(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.synthetic_corpus(5_000) == bench.synthetic_corpus(5_000)
    assert bench.main(["--bytes", "20000", "--merges", "50"]) == 0
    assert "same merges in the same order: yes" in capsys.readouterr().out


def test_one_merge_parser_reads_both_json_forms() -> None:
    import json

    from tokenizers import Tokenizer, models

    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}
    tokenizer = Tokenizer(models.BPE(vocab, [("a", "b"), ("ab", "c")]))
    assert bpe.read_merges(tokenizer) == ([("a", "b"), ("ab", "c")], False)
    data = json.loads(tokenizer.to_str())
    data["model"]["merges"] = ["a b", "ab c"]  # the older form: one "left right" string per merge
    data["model"]["ignore_merges"] = True
    assert bpe.read_merges(Tokenizer.from_str(json.dumps(data))) == ([("a", "b"), ("ab", "c")], True)
    with pytest.raises(ValueError, match="not a BPE"):
        bpe.read_merges(Tokenizer(models.WordLevel({"a": 0}, unk_token="a")))
