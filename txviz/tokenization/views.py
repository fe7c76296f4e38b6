"""The tokenization page's tabs: BPE trained merge by merge, and real tokenizers cutting the reader's text."""

import json

import streamlit as st

from txviz.app import projector, teaching, ui
from txviz.core.tokens import readable_token
from txviz.tokenization import bpe, subwords
from txviz.tokenization import figures as figs

PLAY_SECONDS = 0.8
TABLE_ROWS = 60
REAL_TEXT = "The sailors couldn't see unbelievably far: 12345 waves, naïve tokenizers!"


# cached_data: no model and no arrays; a BpeTrace is tuples of strings and counts (small,
# JSON-like), so a private copy per hit is cheap and nothing is shared between sessions.
@ui.cached_data(max_entries=8, spinner="Training BPE...")
def train(corpus: str, target: int) -> bpe.BpeTrace:
    return bpe.train_bpe(corpus, vocab_size=target or None)


@ui.cached(max_entries=2, spinner=False)
@ui.heavy
def merge_ranks(loaded) -> subwords.MergeRanks:
    return subwords.MergeRanks.from_tokenizer(loaded.tokenizer)


def toggle_play(n_steps: int) -> None:
    playing = not st.session_state.get("bpe_playing", False)
    if playing and st.session_state.get("bpe_step", 0) >= n_steps:
        st.session_state.bpe_step = 0  # play again from the start
    st.session_state.bpe_playing = playing


def step_moved() -> None:
    st.session_state["_bpe_step_moved"] = True


def show_step(trace: bpe.BpeTrace) -> None:
    """Slider, the step's merge, the counts table and the figures at that step."""
    projector.open_stage()  # a fragment's rerun draws its first figure here again, above its slider
    n = trace.n_steps
    if st.session_state.pop("_bpe_step_moved", False) and st.query_params.get("bpe_step") != json.dumps(
        st.session_state.get("bpe_step")
    ):
        # The slider reran this fragment alone, and the link is written by the whole page's run.
        st.rerun(scope="app")
    if "bpe_step" not in st.session_state:  # a link's step past the last merge shows the last
        st.session_state.bpe_step = ui.link_value("bpe_step", 0, lambda step: step >= 0)
    if st.session_state.get("bpe_playing"):
        if st.session_state.bpe_step >= n:
            st.session_state.bpe_playing = False
            st.rerun()  # the whole page, so the timer stops
        st.session_state.bpe_step += 1
    # Written when the merges change (a new corpus or target: a slider of another range, which Streamlit
    # would start from 0) or it is past the last one (a link's), not on every run: a write sends the step
    # to the browser, where it would undo arrow-key moves made while this run was under way.
    if st.session_state.get("_bpe_steps") != n or st.session_state.bpe_step > n:
        st.session_state.bpe_step = min(st.session_state.bpe_step, n)
    st.session_state["_bpe_steps"] = n
    step = st.slider(
        "Merge step (0 = characters only)",
        0,
        max(n, 1),
        key="bpe_step",
        disabled=n == 0,
        on_change=step_moved,
    )
    left, right = st.columns([2, 3])
    with left:
        if step == 0:
            st.markdown(f"**Start**: {len(trace.alphabet)} characters, each its own token.")
        else:
            record = trace.steps[step - 1]
            a, b = (bpe.show_whitespace(t) for t in record.pair)
            st.markdown(
                f"**Merge {step}**: `{a}` + `{b}` → `{bpe.show_whitespace(record.new_token)}` "
                f"(pair seen {record.pair_count} times). {record.tokens_in_use} distinct tokens "
                f"in the corpus, {record.vocab_size} learned."
            )
        rows = bpe.count_table(trace, step, top=TABLE_ROWS)
        st.dataframe(
            [
                {"token": r.token, "count": r.count, "change": r.count - r.previous, "new": r.is_new}
                for r in rows
            ],
            hide_index=True,
            width="stretch",
            height=420,
        )
        words = [word for word, _ in trace.word_counts[:50]]
        word = st.selectbox("Word to follow", words, format_func=bpe.show_whitespace, key="bpe_word")
        initial = list(bpe.normalize_corpus(word))
        ui.show_figure(
            figs.merge_tree(
                initial, trace.segment(word, upto=step), f"'{bpe.show_whitespace(word)}' after {step} merges"
            ),
            key="bpe_tree",
        )
        teaching.notice(
            "each merge joins the most frequent neighbouring pair into one token: frequent words become one "
            "token after a few merges, rare words stay in pieces."
        )
    with right:
        ui.show_figure(figs.vocab_curve(trace, step), key="bpe_curve")
        ui.show_figure(figs.step_heatmap(trace, step, presenting=ui.presenting()), key="bpe_heatmap")


def train_step_by_step() -> None:
    """A corpus and a target size, then the merges played or stepped through."""
    projector.open_stage()  # in projector mode the merge steps come first, the corpus and Play under them
    corpus = ui.text_input("Corpus", bpe.SAILOR_RHYME, key="bpe_corpus", height=140)
    target = st.number_input(
        "Target vocabulary size (characters + merges; 0 = merge until every word is one token)",
        min_value=0,
        max_value=bpe.MAX_MERGES,
        value=ui.link_value("bpe_target", 0, range(bpe.MAX_MERGES + 1)),
        step=1,
        key="bpe_target",
    )
    with ui.user_errors():
        trace = train(corpus, int(target))
    st.caption(
        f"{len(trace.alphabet)} characters, {len(trace.word_counts):,} distinct words, "
        f"{trace.n_steps} merges: stopped because {trace.stop_reason}. Ties go to the "
        "pair of the oldest tokens (characters in code-point order, then merges in order), "
        "as in the tokenizers library's trainer, which learns the same merges."
    )
    if trace.n_steps == 0:
        st.warning(
            "No merge to show: "
            + (
                "the target is not above the number of characters."
                if target
                else "no two tokens stand side by side within a word."
            )
        )
    st.button(
        "Pause" if st.session_state.get("bpe_playing") else "Play",
        icon=":material/pause:" if st.session_state.get("bpe_playing") else ":material/play_arrow:",
        on_click=toggle_play,
        args=(trace.n_steps,),
        key="bpe_play",
        disabled=trace.n_steps == 0,
    )
    playing = PLAY_SECONDS if st.session_state.get("bpe_playing") else None
    with projector.on_stage():
        st.fragment(show_step, run_every=playing)(trace)


def real_tokenizers() -> None:
    """SmolLM2's byte-level BPE and MiniLM's WordPiece on the reader's text, word by word."""
    text = st.text_area(
        "Your text",
        ui.link_value("bpe_real_text", REAL_TEXT),
        key="bpe_real_text",
        max_chars=ui.max_text_chars(subwords.MAX_TEXT_CHARS),
    )
    if not text.strip():
        st.warning("The text is empty: type something to tokenize.")
        st.stop()
    smol = ui.load_model("smollm2")
    mini = ui.load_model("minilm")
    with ui.user_errors():
        ranks = merge_ranks(smol)
        smol_words = subwords.byte_level_words(smol.tokenizer, text, ranks)
        mini_words = subwords.wordpiece_words(mini.tokenizer, text)
    ui.show_figure(
        figs.token_strips([("SmolLM2 byte-level BPE", smol_words), ("MiniLM WordPiece", mini_words)]),
        key="bpe_strips",
    )
    st.caption(
        "␣ is a space the token carries; � is part of a character that spans several byte "
        "tokens. WordPiece lower-cases, strips accents and marks word-inner pieces with ##."
    )
    left, right = st.columns(2)
    with left:
        st.markdown("**SmolLM2**: byte-level BPE, merges applied lowest rank first")
        index = st.selectbox(
            "Word",
            range(len(smol_words)),
            index=ui.link_index("bpe_real_word", range(len(smol_words))),
            format_func=lambda i: smol_words[i].text.strip() or repr(smol_words[i].text),
            key="bpe_real_word",
        )
        chosen = smol_words[index]
        ui.show_figure(
            figs.merge_tree(
                chosen.raw_symbols,
                chosen.stages,
                f"'{chosen.text}': {len(chosen.stages)} merges → {len(chosen.tokens)} token(s)",
                display=lambda piece: readable_token(smol.tokenizer, piece, keep_spaces=True),
            ),
            key="bpe_real_tree",
        )
        st.dataframe(
            [
                {
                    "rank": s.rank,
                    "merge": f"{s.pair[0]} + {s.pair[1]}",
                    "pieces after": " ".join(s.pieces),
                }
                for s in chosen.stages
            ],
            hide_index=True,
            width="stretch",
        )
        st.caption(f"Final tokens {list(chosen.tokens)}, ids {list(chosen.ids)}.")
    with right:
        st.markdown("**MiniLM**: WordPiece, greedy longest match from the left")
        st.dataframe(
            [
                {"word": w.text, "tokens": " ".join(w.tokens), "ids": " ".join(map(str, w.ids))}
                for w in mini_words
            ],
            hide_index=True,
            width="stretch",
        )
