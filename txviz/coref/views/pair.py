"""The minimal pair: one from the set, or two sentences the user writes and marks by word."""

from __future__ import annotations

import streamlit as st

from txviz.app import ui, widgets
from txviz.coref import pairs as coref_pairs
from txviz.coref.marking import find_marking
from txviz.coref.pairs import CorefInputError, CorefPair, differing_words, make_pair, split_words


def mark_by_word(a: str, b: str, example: CorefPair) -> None:
    """Choose the pronoun and candidates in a new sentence A by word, as positions move with the words."""
    marked = st.session_state.get("own_marked")
    # Streamlit drops a widget's state when a run does not draw it: then the marking is restored too.
    if marked is not None and marked[0] == a and "own_pronoun" in st.session_state:
        return
    _, pronoun, candidates = marked or (None, example.pronoun_text, example.candidate_texts)
    try:
        changed = differing_words(a, b)
    except CorefInputError:  # the word counts differ: the page says so below
        changed = ()
    found = find_marking(a, pronoun, candidates, changed)
    for key in [k for k in st.session_state if str(k).startswith("own_answer_")]:
        del st.session_state[key]  # what the pronoun meant in the old sentence says nothing of the new one
    st.session_state["own_pronoun"] = found.pronoun
    st.session_state["own_candidates"] = list(found.candidates)
    if found.problems:
        st.info(
            f"Sentence A is new, and its words could not all be marked again: {'; '.join(found.problems)}. "
            "Choose them below."
        )


def own_pair(example: CorefPair) -> CorefPair:
    """Sentences typed by the user, with pronoun and candidates chosen among their words."""
    a = st.text_input(
        "Sentence A",
        ui.link_value("own_a", example.sentence_a),
        key="own_a",
        max_chars=ui.max_text_chars(400),
    )
    b = st.text_input(
        "Sentence B (change one word)",
        ui.link_value("own_b", example.sentence_b),
        key="own_b",
        max_chars=ui.max_text_chars(400),
    )
    words = split_words(a)
    if not words:
        st.warning("Write sentence A first.")
        st.stop()
    mark_by_word(a, b, example)
    choices = list(range(len(words)))
    pronoun = st.pills("Pronoun", choices, format_func=lambda i: words[i].text, key="own_pronoun")
    candidates = st.pills(
        "Two candidates",
        choices,
        format_func=lambda i: words[i].text,
        selection_mode="multi",
        key="own_candidates",
    )
    st.session_state["own_marked"] = (
        a,
        None if pronoun is None else words[pronoun].text,
        [words[i].text for i in candidates],
    )
    if pronoun is None or len(candidates) != 2:
        st.info("Choose the pronoun and exactly two candidates among the words of sentence A.")
        st.stop()
    candidates = tuple(sorted(candidates))
    texts = [words[i].text for i in candidates]
    is_example = a == example.sentence_a and candidates == example.candidates  # the example's own words
    answers = [  # keyed by the candidates, so a new choice of candidates starts unmarked
        st.segmented_control(
            f"In {name}, '{words[pronoun].text}' means",
            (0, 1),
            format_func=texts.__getitem__,
            key=f"own_answer_{name}_{candidates}",
            default=getattr(example, f"answer_{name.lower()}") if is_example else None,
        )
        for name in "AB"
    ]
    if None in answers:
        st.caption("Mark what the pronoun means in each sentence to see whether a head gets it right.")
    with ui.user_errors():
        return make_pair(a, b, pronoun, candidates, *answers)


def choose_pair() -> CorefPair:
    """A minimal pair from the set or one the user writes, shown as two lines of text."""
    pairs = coref_pairs.load_pairs()  # read through the module: tests put a smaller set in its place
    sources = ["From the set", "Write your own"]
    source = widgets.linked_radio("Pair", sources, "pair_source")
    if source == "From the set":
        labels = [f"{i + 1}. {p.label} [{p.kind}]" for i, p in enumerate(pairs)]
        pair = pairs[
            st.selectbox(
                f"Minimal pair ({len(pairs)} in the set)",
                range(len(pairs)),
                index=ui.link_index("pair_index", range(len(pairs))),
                format_func=labels.__getitem__,
                key="pair_index",
            )
        ]
    else:
        pair = own_pair(pairs[0])
    st.text(f"A: {pair.sentence_a}\nB: {pair.sentence_b}")
    return pair
