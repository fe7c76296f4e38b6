"""Coreference: where does a pronoun look, and does that follow what it means?"""

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.coref import figures as figs
from txviz.coref import stored as coref_stored
from txviz.coref import translation
from txviz.coref.answers import (
    ANSWER_METHODS,
    answers_over_pairs,
    compare_over_set,
    head_readings,
    model_answer,
    verdicts,
)
from txviz.coref.marking import find_marking
from txviz.coref.pairs import (
    CorefInputError,
    CorefPair,
    differing_words,
    load_kinds,
    load_pairs,
    make_pair,
    pairs_of_kind,
    split_words,
)
from txviz.coref.runs import DECODER_QUERY, QUERIES, PairTrace, attention_over_pairs, query_name, trace_pair
from txviz.coref.scoring import cross_validate, cv_by_kind, seed_stability
from txviz.coref.spans import PairAttention

ui.setup_page(
    "Coreference",
    "Two sentences that differ in one word, and the word changes what the pronoun means. "
    "Does any attention head follow the change?",
)


@ui.cached(max_entries=64, spinner=False)
@ui.heavy
def pair_trace(loaded, pair: CorefPair, query: str) -> PairTrace:
    return trace_pair(loaded, pair, query)


CHUNK = 8  # pairs per cached step: the progress bar moves between steps


@ui.cached(max_entries=512, spinner=False)  # 17 chunks of the set per model and reading
@ui.heavy
def chunk_attention(loaded, query: str, start: int) -> list[PairAttention]:
    return attention_over_pairs(loaded, load_pairs()[start : start + CHUNK], query)


@ui.cached(max_entries=512, spinner=False)
@ui.heavy
def chunk_answers(loaded, method: str, start: int) -> list:
    return answers_over_pairs(loaded, load_pairs()[start : start + CHUNK], method)


@ui.cached(max_entries=64, spinner=False)
@ui.heavy
def pair_answers(loaded, pair: CorefPair, method: str) -> tuple:
    return tuple(model_answer(loaded, pair, s, method) for s in (pair.sentence_a, pair.sentence_b))


def over_set(label: str, n_pairs: int, step) -> list:
    """Run a cached step over the set, chunk by chunk, with a progress bar (instant when cached)."""
    bar, out = st.progress(0.0, text=label), []
    for start in range(0, n_pairs, CHUNK):
        out += step(start)
        bar.progress(len(out) / n_pairs, text=f"{label} {len(out)}/{n_pairs}")
    bar.empty()
    return out


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


pairs = load_pairs()
sources = ["From the set", "Write your own"]
source = st.radio(
    "Pair", sources, index=ui.link_index("pair_source", sources), horizontal=True, key="pair_source"
)
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

left, right = st.columns(2)
with left:
    name = ui.model_picker(kinds=("encoder", "decoder"), default="minilm")
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
key = f"{name}@{loaded.device}"
query = "pronoun"
if loaded.is_causal:
    query = right.radio(
        "Read attention from",
        QUERIES,
        index=ui.link_index("query", QUERIES, QUERIES.index(DECODER_QUERY)),
        format_func=query_name,
        horizontal=True,
        key="query",
        help="A decoder's pronoun has not read the rest of the sentence yet.",
    )
    right.caption(
        "Default: the last token. In most pairs the deciding word comes after the pronoun, and a "
        "decoder's pronoun cannot see later words: its attention is the same in A and B, so every head "
        "scores exactly 50% there. The last token has read the whole sentence, deciding word included."
    )

with ui.user_errors():
    traced = pair_trace(loaded, pair, query)
    attentions = coref_stored.find(loaded, pairs, query)  # computed once per model and reading, then read
    if attentions is None:
        attentions = over_set(
            f"Scoring every head of {name} on the set (once for this model; kept for every later visit)...",
            len(pairs),
            lambda start: chunk_attention(loaded, query, start),
        )
        coref_stored.save(loaded, pairs, query, attentions)
for note in traced.notes:
    st.info(note)

described = load_kinds()
kinds = [k for k in described if any(p.kind == k for p in pairs)]
ALL_KINDS = ""  # not None: Streamlit shows a None option as no choice at all ("Choose an option")
kind = st.selectbox(
    "Score heads on pairs of kind",
    [ALL_KINDS, *kinds],
    index=ui.link_index("kind", [ALL_KINDS, *kinds]),
    format_func=lambda k: (
        f"all kinds ({len(pairs)} pairs)"
        if k == ALL_KINDS
        else f"{k} ({len(pairs_of_kind(pairs, k))} pairs): {described[k]}"
    ),
    key="kind",
)
kind = kind or None
with st.expander("Cross-validation: how heads are chosen and tested"):
    n_folds = st.slider("Folds", 2, 10, 5, key="folds", help="The pairs are dealt into this many folds.")
    fold_seed = st.number_input("Seed of the folds", 0, 10_000, 0, key="fold_seed")
    st.caption(
        "Each fold in turn is held out: the head with the best accuracy on the other folds is chosen "
        "and scored on the held-out fold. Both sentences of a pair are always in the same fold."
    )
scored = pairs_of_kind(pairs, kind)
with ui.user_errors():
    cv = cross_validate([attentions[i] for i in scored], int(n_folds), int(fold_seed))
    stability = seed_stability([attentions[i] for i in scored], int(n_folds), range(10))

st.subheader("Every head at once")
picked = (f"layer_{key}", f"head_{key}")
layer, head = widgets.layer_head_picker(loaded.n_layers, loaded.n_heads, picked, cv.best_head)
for i, (column, grid) in enumerate(
    zip(ui.figure_columns(3), figs.head_grids(traced.attention, (layer, head), ui.presenting()), strict=True)
):
    with column:
        widgets.head_grid(grid, f"coref_grid_{i}", picked)
first, second = traced.attention.candidates
st.caption(
    f"Each cell: attention from the {query_name(query)} to '{first}' minus to '{second}' "
    "(all pieces of a word summed). The difference grid shows the heads the changed word moves. "
    "Click a head in any grid to pick it."
)
st.subheader(f"Layer {layer}, head {head} in both sentences")
ui.show_figure(
    figs.pair_heatmaps(
        traced.trace_a, traced.trace_b, layer, head, traced.spans_a, traced.spans_b, ui.presenting()
    )
)
teaching.notice(
    "compare the pronoun's row in the two sentences: a head that follows meaning moves its weight to the "
    "other candidate when the one changed word changes who the pronoun is."
)
for line in head_readings(traced.attention, (layer, head)):
    st.markdown(line)
if loaded.is_causal:  # ablation reads next-token logits: decoders only
    widgets.ablate_head_link(name, pair.sentence_a, layer, head, "sentence A")
spans = traced.spans_a  # why the pronoun prefers the first candidate to the second, split into parts
widgets.why_attend_link(
    name, pair.sentence_a, layer, head, why_query=spans.pronoun[-1], why_key=spans.candidates[0][0],
    why_mode="this key rather than another", why_other=spans.candidates[1][0],
)  # fmt: skip

st.subheader("Which heads track coreference?")
low, high = cv.coin_flip_band
which = "all kinds" if kind is None else f"kind '{kind}'"
cols = st.columns(3)
cols[0].metric(
    "Head chosen on all pairs",
    "L{} H{}".format(*cv.best_head),
    help=f"{cv.best_accuracy:.1%} on the {cv.n_pairs} pairs it was chosen on: optimistic, it chose itself.",
)
cols[1].metric(
    "Cross-validated accuracy",
    f"{cv.held_out_accuracy:.1%} ± {cv.fold_spread:.1%}",
    help=f"Each sentence scored once, by a head chosen without its pair; ± is the spread over {cv.k} folds.",
)
cols[2].metric(
    "Coin flip",
    f"{low:.0%} – {high:.0%}",
    help=f"95% of coin flips score in this range on {cv.n_sentences} sentences; chance is {cv.chance:.0%}.",
)
if cv.beats_chance:
    verdict = "above the coin-flip band: choosing a head this way beats chance"
elif cv.held_out_accuracy < low:
    verdict = "below the coin-flip band: the chosen heads look at the wrong candidate more than chance"
else:
    verdict = "inside the coin-flip band: no evidence that choosing a head this way beats chance"
st.markdown(
    f"On {which}, a head chosen on {cv.k - 1} folds of pairs and tested on the held-out fold scores "
    f"**{cv.held_out_accuracy:.1%}** over all {cv.n_sentences} held-out sentences (mean over folds "
    f"{cv.mean_fold_accuracy:.1%} ± {cv.fold_spread:.1%}), **{verdict}**."
)
if cv.all_tied:
    st.info(
        f"Every head scores exactly {cv.accuracy.flat[0]:.0%} on these pairs, so no head can be chosen: "
        f"L{cv.best_head[0]} H{cv.best_head[1]} is only the first of a {cv.accuracy.size}-way tie."
    )
ui.show_figure(figs.cv_chart(cv), key="cv")
counts = ", ".join(f"L{h[0]} H{h[1]} in {n}" for h, n in cv.choice_counts)
st.caption(
    f"A head scores a sentence when it attends more to the right candidate (a tie counts half). Both "
    f"sentences of a pair are always in the same fold. Folds chose: {counts} (of {cv.k}). "
    f"{stability.sentence} The best of {loaded.n_layers * loaded.n_heads} heads on the pairs it was "
    "chosen on looks better than it is by luck; the held-out numbers do not."
)
with st.expander("Every kind at once"):
    st.dataframe(cv_by_kind(attentions, pairs, int(n_folds), int(fold_seed)), hide_index=True)

if loaded.is_causal:
    st.subheader("The model's own answer")
    method = st.radio(
        "Ask the model by",
        ANSWER_METHODS,
        horizontal=True,
        key="method",
        help="substitution: put each candidate in place of the pronoun and score the rest "
        "of the sentence; question: ask what the pronoun refers to.",
    )
    with ui.user_errors():
        answers = pair_answers(loaded, pair, method)
    ui.show_figure(figs.answer_chart(pair.candidate_texts, [a.probabilities for a in answers], ["A", "B"]))
    for label, verdict in zip("AB", verdicts([traced.attention], [answers], (layer, head)), strict=True):
        st.write(f"Sentence {label}: {verdict.describe((layer, head))}")
    if st.toggle(f"Compare over the {len(scored)} pairs scored above", key="compare_all"):
        with ui.user_errors():
            every = over_set(
                "Asking the model about every pair...",
                len(pairs),
                lambda start: chunk_answers(loaded, method, start),
            )
        summary = compare_over_set([attentions[i] for i in scored], [every[i] for i in scored], (layer, head))
        st.write(summary.sentence)
        st.dataframe(summary.rows, hide_index=True)

st.subheader("The book's il/elle example (probml 15.5.1)")
st.markdown(
    "Translated into French, *it* becomes **il** when it means *l'animal* (masculine) and **elle** when "
    "it means *la rue* (feminine), so a translator must first decide what *it* refers to. **txviz ships "
    "no translation model**: the French below is written by hand. What the model here can show is the "
    f"English half, whether a head of {name} links *it* to the right noun in each sentence."
)
with ui.user_errors():
    il_elle = pair_trace(loaded, translation.book_pair(), query)
st.dataframe(translation.rows(il_elle.pair, il_elle.attention, (layer, head)), hide_index=True)
both = translation.heads_getting_both(il_elle.attention)
st.caption(
    f"Attention from the {query_name(query)} in layer {layer}, head {head} (chosen above), all pieces of a "
    f"word summed. {int(both.sum())} of {both.size} heads of {name} attend more to the right noun in both "
    "sentences, so would point to the right French pronoun in both; a head choosing at random does so one "
    f"time in four. {translation.chance_verdict(il_elle.attention)} Attending to a noun is not translating: "
    "a translation model would also need the noun's French gender, which nothing here learns."
)

st.warning(
    "Attention weights are one signal, not an explanation: a head can look at a word without "
    "using it, and a model can resolve a pronoun through paths no single head shows."
)
