"""The BPE merge lab page: widgets move without errors, bad corpora get clear messages."""

from __future__ import annotations

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.tokenization import bpe, subwords
from txviz.tokenization import figures as figs

PAGE = "pages/4_Tokenization.py"
REAL = "Real tokenizers on your text"


def run_page(view: str = "Train BPE step by step", **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=180)
    at.session_state["bpe_view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def table(at: AppTest) -> dict[str, int]:
    return dict(zip(at.dataframe[0].value["token"], at.dataframe[0].value["count"], strict=True))


def test_train_tab_moves_its_widgets() -> None:
    at = run_page()
    assert_clean(at)
    assert at.slider(key="bpe_step").max == 50  # the rhyme merges into whole words in 50 steps
    assert table(at)["_"] == 33 and table(at)["e"] == 28
    at.slider(key="bpe_step").set_value(1).run()
    assert table(at)["se"] == 13 and table(at)["s"] == 2
    at.button(key="bpe_play").click().run()  # playing advances one merge per tick
    assert at.session_state["bpe_playing"] and at.slider(key="bpe_step").value == 2
    assert table(at)["e_"] == 12
    at.button(key="bpe_play").click().run()
    assert not at.session_state["bpe_playing"]
    at.selectbox(key="bpe_word").set_value("could ").run()
    at.number_input(key="bpe_target").set_value(25).run()
    assert at.slider(key="bpe_step").max == 6 and at.slider(key="bpe_step").value == 2
    at.slider(key="bpe_step").set_value(6).run()
    assert_clean(at)


def test_play_at_the_end_starts_again_and_stops_at_the_last_merge() -> None:
    at = run_page(bpe_target=21)  # two merges
    at.slider(key="bpe_step").set_value(2).run()
    at.button(key="bpe_play").click().run()
    assert at.slider(key="bpe_step").value == 1
    at.session_state["bpe_step"] = 2
    at.run()  # a tick at the last merge stops playing
    assert not at.session_state["bpe_playing"]
    assert_clean(at)


def test_own_text_one_character_repeated() -> None:
    at = run_page(bpe_corpus="aaaaaaaa")
    assert_clean(at)
    assert at.slider(key="bpe_step").max == 3
    at.slider(key="bpe_step").set_value(3).run()
    assert table(at) == {"aaaaaaaa": 1, "aaaa": 0}


@pytest.mark.parametrize("text", ["", "   \n "])
def test_empty_corpus_gives_a_message(text: str) -> None:
    at = run_page(bpe_corpus=text)
    assert not at.exception
    assert any("empty" in w.value for w in at.warning)


def test_single_character_has_no_merge_and_says_so() -> None:
    at = run_page(bpe_corpus="a")
    assert_clean(at)  # a valid corpus with nothing to merge: a warning, not an error
    assert any("No merge" in w.value for w in at.warning)


def test_five_megabyte_upload_is_cut_with_a_warning() -> None:
    at = run_page(bpe_corpus_source="Upload a .txt file")
    data = (bpe.SAILOR_RHYME * (5_000_000 // len(bpe.SAILOR_RHYME) + 1)).encode()[:5_000_000]
    at.file_uploader(key="bpe_corpus_upload").upload("big.txt", data, "text/plain").run()
    assert_clean(at)
    assert any("first 100,000" in w.value for w in at.warning)
    expected = bpe.train_bpe(data.decode()[:100_000])  # the page trains on what it kept
    assert at.slider(key="bpe_step").max == expected.n_steps


def test_non_utf8_upload_gives_a_message() -> None:
    at = run_page(bpe_corpus_source="Upload a .txt file")
    at.file_uploader(key="bpe_corpus_upload").upload("latin.txt", "naïve café".encode("latin-1")).run()
    assert not at.exception
    assert any("not UTF-8" in e.value for e in at.error)


def test_real_tokenizer_tab_moves_its_widgets() -> None:
    at = run_page(REAL)
    assert_clean(at)
    words = at.dataframe[1].value  # MiniLM's words
    assert "##" in "".join(words["tokens"])
    at.text_area(key="bpe_real_text").input("Unbelievably, tokenization works.").run()
    at.selectbox(key="bpe_real_word").set_value(2).run()  # " tokenization"
    merges = at.dataframe[0].value
    assert list(merges["rank"]) == sorted(merges["rank"]) and len(merges) > 3
    assert merges["pieces after"].iloc[-1] == "Ġtoken ization"
    at.text_area(key="bpe_real_text").input("  ").run()
    assert not at.exception
    assert any("empty" in w.value for w in at.warning)


def test_byte_level_replay_gives_the_tokenizers_own_tokens(smollm2, minilm) -> None:
    text = "Héllo wörld, 12345 isn't  easy!\n日本語 🙂 tokenization"
    words = subwords.byte_level_words(smollm2.tokenizer, text)
    assert all(subwords.final_pieces(w) == w.tokens for w in words)
    ids = smollm2.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert [i for w in words for i in w.ids] == ids
    for word in words:  # lowest rank first: each merge makes pairs that were learned later
        ranks = [stage.rank for stage in word.stages]
        assert ranks == sorted(ranks)
    pieces = subwords.wordpiece_words(minilm.tokenizer, text)
    assert [i for w in pieces for i in w.ids] == minilm.tokenizer(text, add_special_tokens=False)["input_ids"]
    token = next(w for w in pieces if w.text == "tokenization")
    assert token.tokens == ("token", "##ization") and token.readable == ("token", "ization")
    # The strips put both tokenizers' pieces at their characters, so words line up.
    strips = figs.token_strips([("smol", words), ("mini", pieces)]).to_dict()["data"]
    mini_starts = [start for w in pieces for start, _ in w.offsets]
    assert list(strips[1]["base"]) == mini_starts
    smol_bases = list(strips[0]["base"])
    emoji = [i for i, t in enumerate(t for w in words for t in w.tokens) if t == "ĠðŁĻĤ"]
    assert emoji and smol_bases[emoji[0]] == text.index(" 🙂")
    japanese = next(w for w in words if w.text.strip() == "日本語")
    assert len(japanese.tokens) > 3  # byte pieces of three characters share their spans
    spans = figs.token_spans([japanese])
    assert abs(sum(width for _, width in spans) - len(japanese.text)) < 1e-9


def test_the_link_keeps_the_merge_step() -> None:
    from urllib.parse import urlencode

    from link_views import open_link

    at = run_page(bpe_target=40)  # a setting of its own beside the step: the link carries both
    at.slider(key="bpe_step").set_value(7).run()
    assert_clean(at)
    link = dict(at.query_params)
    assert link["bpe_step"] == "7"
    (control,) = [c for c in at.sidebar.code if c.value.startswith("?")]  # the copy-link control
    assert control.value == "?" + urlencode(link)

    fresh = open_link(ROOT / PAGE, link)
    assert_clean(fresh, "the link")
    assert fresh.slider(key="bpe_step").value == 7
    assert fresh.slider(key="bpe_step").max == at.slider(key="bpe_step").max
    assert any(m.value.startswith("**Merge 7**") for m in fresh.markdown)
    assert table(fresh) == table(at)


@pytest.mark.parametrize(("step", "last"), [("99", True), ("-3", False), ("true", False), ('"7"', False)])
def test_a_links_step_past_the_last_merge_shows_the_last_and_a_bad_one_the_start(
    step: str, last: bool
) -> None:
    from link_views import open_link

    fresh = open_link(ROOT / PAGE, {"bpe_target": "40", "bpe_step": step})
    assert_clean(fresh, step)
    n_steps = bpe.train_bpe(bpe.SAILOR_RHYME, vocab_size=40).n_steps
    assert fresh.slider(key="bpe_step").value == (n_steps if last else 0)
