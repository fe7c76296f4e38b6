"""The coreference page: widgets move without exceptions, bad pairs get messages, a real browser."""

from __future__ import annotations

import pytest
from conftest import ROOT, assert_clean, click_grid
from streamlit.testing.v1 import AppTest

from txviz.app import ui
from txviz.coref import pairs as coref_pairs
from txviz.coref.pairs import load_pairs, pairs_of_kind
from txviz.coref.runs import attention_over_pairs
from txviz.coref.scoring import cross_validate

PAGE = str(ROOT / "pages/6_Coreference.py")
TIMEOUT = 300


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small forward passes run faster on one thread when the machine is shared; restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


KINDS = ("animacy", "size", "cause/effect")


@pytest.fixture(autouse=True)
def small_set(monkeypatch):
    """The page scores 12 pairs of three kinds (the animal pair first), so tests stay quick."""
    every = load_pairs()
    pairs = tuple(every[i] for i in sorted(i for kind in KINDS for i in pairs_of_kind(every, kind)[:4]))
    ui.clear_cached()  # cached chunks of the full set must not be mixed with this one
    monkeypatch.setattr(coref_pairs, "load_pairs", lambda *args: pairs)
    yield pairs
    ui.clear_cached()


def run_page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT).run()
    assert_clean(at)
    return at


def metric(at: AppTest, start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(start))


def test_default_pair_on_minilm_shows_cross_validated_scores_and_the_caveat(minilm, small_set):
    at = run_page()
    assert not at.error
    assert at.selectbox(key="pair_index").value == 0
    assert "one signal, not an explanation" in at.warning[-1].value
    # the page's numbers are cross_validate's on the same pairs, 5 folds, fold seed 0
    cv = cross_validate(attention_over_pairs(minilm, small_set), 5, 0)
    assert metric(at, "Head chosen on all pairs") == "L{} H{}".format(*cv.best_head)
    assert metric(at, "Cross-validated") == f"{cv.held_out_accuracy:.1%} ± {cv.fold_spread:.1%}"
    low, high = cv.coin_flip_band
    assert metric(at, "Coin flip") == f"{low:.0%} – {high:.0%}"
    assert any(f"over all {cv.n_sentences} held-out sentences" in m.value for m in at.markdown)
    assert any("Under 10 fold seeds" in c.value for c in at.caption)
    kinds = at.dataframe[0].value
    assert list(kinds["kind"]) == ["all kinds", *KINDS] and list(kinds["pairs"]) == [12, 4, 4, 4]
    assert kinds["head chosen on all"][0] == "L{} H{}".format(*cv.best_head)
    # the head shown first is the one chosen on all pairs
    assert at.slider(key="layer_minilm@cpu").value == cv.best_head[0]


def test_moving_widgets_keeps_the_page_working(minilm, small_set):
    at = run_page()
    at.selectbox(key="pair_index").set_value(7).run()
    assert_clean(at)
    at.slider(key="layer_minilm@cpu").set_value(2).run()
    at.slider(key="head_minilm@cpu").set_value(5).run()
    assert_clean(at)
    at.selectbox(key="kind").set_value("size").run()
    at.slider(key="folds").set_value(3).run()
    at.number_input(key="fold_seed").set_value(7).run()
    assert_clean(at)
    sizes = [small_set[i] for i in pairs_of_kind(small_set, "size")]
    cv = cross_validate(attention_over_pairs(minilm, sizes), 3, 7)
    assert metric(at, "Head chosen on all pairs") == "L{} H{}".format(*cv.best_head)
    assert metric(at, "Cross-validated") == f"{cv.held_out_accuracy:.1%} ± {cv.fold_spread:.1%}"
    assert any(
        "On kind 'size'" in m.value and "over all 8 held-out sentences" in m.value for m in at.markdown
    )
    assert any("Layer 2, head 5" in s.value for s in at.subheader)


def test_own_pair_with_bad_input_gets_clear_messages(minilm):
    at = run_page()
    at.radio(key="pair_source").set_value("Write your own").run()
    assert not at.exception and not at.error  # the example pair comes marked
    at.text_input(key="own_b").set_value("The animal didn't cross the street because it was wide.").run()
    assert "same number of words" in at.error[0].value
    at.text_input(key="own_b").set_value("The dog didn't cross the street because it was too wide.").run()
    assert "differs in one word" in at.error[0].value
    at.text_input(key="own_b").set_value("The animal didn't cross the street because it was too wide.")
    at.pills(key="own_candidates").set_value([1]).run()
    assert "exactly two candidates" in at.info[0].value
    at.pills(key="own_candidates").set_value([1, 8]).run()
    at.pills(key="own_pronoun").set_value(1).run()
    assert "three different words" in at.error[0].value
    at.pills(key="own_pronoun").set_value(7).run()
    assert_clean(at)
    assert any("Layer" in s.value for s in at.subheader)


def test_own_pair_answers_can_be_marked_and_heads_are_judged_by_them(minilm):
    at = run_page()
    at.radio(key="pair_source").set_value("Write your own").run()
    readings = [m.value for m in at.markdown if m.value.startswith("Sentence ")]
    assert "the pronoun means animal" in readings[0] and "the pronoun means street" in readings[1]
    at.text_input(key="own_a").set_value("Anna thanked Maria because she had helped.").run()
    at.text_input(key="own_b").set_value("Anna thanked Maria because she was helped.").run()
    at.pills(key="own_pronoun").set_value(4).run()
    at.pills(key="own_candidates").set_value([0, 2]).run()
    assert_clean(at)
    readings = [m.value for m in at.markdown if m.value.startswith("Sentence ")]
    assert len(readings) == 2 and all("no right answer marked" in r for r in readings)
    at.segmented_control(key="own_answer_A_(0, 2)").set_value(1).run()
    at.segmented_control(key="own_answer_B_(0, 2)").set_value(0).run()
    assert_clean(at)
    readings = [m.value for m in at.markdown if m.value.startswith("Sentence ")]
    assert "the pronoun means Maria" in readings[0] and "the pronoun means Anna" in readings[1]


def test_decoder_page_reads_the_last_token_by_default_and_explains_why(smollm2):
    at = run_page()
    at.selectbox(key="model").set_value("smollm2").run()
    assert_clean(at)
    assert at.radio(key="query").value == "end"
    assert any("Default: the last token" in c.value for c in at.caption)
    assert not any("comes after the pronoun" in i.value for i in at.info)
    at.radio(key="query").set_value("pronoun").run()
    assert_clean(at)
    assert any("comes after the pronoun" in i.value for i in at.info)
    at.selectbox(key="kind").set_value("size").run()  # the deciding word after the pronoun: all tie
    assert any("Every head scores exactly 50%" in i.value for i in at.info)
    at.radio(key="query").set_value("end").run()
    assert not any("Every head scores exactly" in i.value for i in at.info)
    at.selectbox(key="kind").set_value("cause/effect").run()
    at.toggle(key="compare_all").set_value(True).run()
    assert_clean(at)
    assert any("Over the set, the model answers" in m.value for m in at.markdown)
    assert any("head L" in m.value and "looks more at" in m.value for m in at.markdown)
    at.toggle(key="compare_all").set_value(False).run()
    at.radio(key="method").set_value("question").run()
    assert_clean(at)


def test_decoder_candidate_after_the_pronoun_is_explained_not_an_error(smollm2):
    at = run_page()
    at.selectbox(key="model").set_value("smollm2").run()
    at.radio(key="query").set_value("pronoun").run()
    at.radio(key="pair_source").set_value("Write your own").run()
    at.text_input(key="own_a").set_value("Tom said that he would call Bill today.").run()
    at.text_input(key="own_b").set_value("Tom said that he would call Bill tomorrow.").run()
    at.pills(key="own_pronoun").set_value(3).run()
    at.pills(key="own_candidates").set_value([0, 6]).run()
    assert_clean(at)
    assert any("'Bill' comes after the pronoun" in i.value for i in at.info)


def test_il_elle_section_says_what_french_needs_without_a_translation_model(minilm, small_set):
    at = run_page()
    assert not at.error
    assert any("il/elle" in s.value for s in at.subheader)
    assert any("ships no translation model" in m.value for m in at.markdown)
    rows = at.dataframe[-1].value
    assert list(rows["French needs"]) == ["il (l'animal, masculine)", "elle (la rue, feminine)"]
    assert set(rows["the head points to"]) <= {"il", "elle", "a tie"}


def test_clicking_a_head_in_a_grid_picks_it(minilm, small_set):
    at = run_page()
    click_grid(at, "coref_grid_2", 4, 7)  # the difference grid
    assert not at.exception and not at.error
    assert (at.slider(key="layer_minilm@cpu").value, at.slider(key="head_minilm@cpu").value) == (4, 7)
    assert any(s.value == "Layer 4, head 7 in both sentences" for s in at.subheader)


TROPHY = "The trophy didn't fit in the suitcase because it was too {}."


def test_own_pair_marks_a_new_sentence_by_word_not_by_position(minilm, small_set):
    at = run_page()
    at.radio(key="pair_source").set_value("Write your own").run()
    at.text_input(key="own_a").set_value(TROPHY.format("big"))
    at.text_input(key="own_b").set_value(TROPHY.format("small")).run()
    assert_clean(at)
    assert at.pills(key="own_pronoun").value == 8  # "it", not "because" at the old pronoun's position
    assert at.pills(key="own_candidates").value == [1, 6]  # "trophy" and "suitcase"
    at.segmented_control(key="own_answer_A_(1, 6)").set_value(0).run()
    at.segmented_control(key="own_answer_B_(1, 6)").set_value(1).run()
    assert_clean(at)
    readings = [m.value for m in at.markdown if m.value.startswith("Sentence ")]
    assert "the pronoun means trophy" in readings[0] and "the pronoun means suitcase" in readings[1]
    # A sentence whose candidates cannot be told apart: the page says so and waits for a choice.
    at.text_input(key="own_a").set_value("The cat saw the dog and the bird so she ran.")
    at.text_input(key="own_b").set_value("The cat saw the dog and the bird so she hid.").run()
    assert not at.exception
    assert any("no two clear candidates" in i.value and "cat, dog, bird" in i.value for i in at.info)
    assert at.pills(key="own_pronoun").value == 9 and at.pills(key="own_candidates").value == []


def test_kind_picker_shows_all_kinds_after_a_word_count_error(minilm, small_set):
    at = run_page()
    at.radio(key="pair_source").set_value("Write your own").run()
    at.text_input(key="own_b").set_value("The animal didn't cross the street because it was wide.").run()
    assert "same number of words" in at.error[0].value
    at.text_input(key="own_b").set_value("The animal didn't cross the street because it was too wide.").run()
    assert_clean(at)
    picker = at.selectbox(key="kind")
    # A None option reads as no choice: the box would show "Choose an option" under "On all kinds".
    assert picker.index == 0 and picker.options[0].startswith("all kinds")
    assert any("On all kinds" in m.value for m in at.markdown)


def test_a_new_sentence_with_the_example_positions_starts_unmarked(minilm, small_set):
    at = run_page()
    at.radio(key="pair_source").set_value("Write your own").run()
    at.text_input(key="own_a").set_value("The dog didn't chase the cat because it was very tired.")
    at.text_input(key="own_b").set_value("The dog didn't chase the cat because it was very slow.").run()
    assert_clean(at)
    assert at.pills(key="own_candidates").value == [1, 5]  # where the example's candidates were
    readings = [m.value for m in at.markdown if m.value.startswith("Sentence ")]
    assert len(readings) == 2 and all("no right answer marked" in r for r in readings)


def test_second_open_reads_the_stored_set_scores_and_runs_no_pass_over_the_set(
    minilm, small_set, monkeypatch, tmp_path
):
    """The set's head scores do not depend on the visitor: computed once, stored, read on later opens."""
    from txviz.coref import runs

    monkeypatch.setenv("TXVIZ_STORE_DIR", str(tmp_path))
    first = run_page()
    assert list((tmp_path / "coref").iterdir()), "the first open stores the set's attention"
    ui.clear_cached()  # a fresh server: only the disk remembers

    def no_pass(*args, **kwargs):
        raise AssertionError("the set's attention was computed again")

    monkeypatch.setattr(runs, "attention_over_pairs", no_pass)
    again = run_page()
    assert metric(again, "Cross-validated") == metric(first, "Cross-validated")
    assert metric(again, "Head chosen on all pairs") == metric(first, "Head chosen on all pairs")
