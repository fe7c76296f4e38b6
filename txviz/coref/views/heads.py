"""The Coreference page's sections: the model's reading, every head, the cross-validated choice of a
head, the model's own answer and the book's il/elle example."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.coref import figures as figs
from txviz.coref import pairs as coref_pairs
from txviz.coref import runs, translation
from txviz.coref import stored as coref_stored
from txviz.coref.answers import (
    ANSWER_METHODS,
    answers_over_pairs,
    compare_over_set,
    head_readings,
    model_answer,
    verdicts,
)
from txviz.coref.pairs import CorefPair, load_kinds, pairs_of_kind
from txviz.coref.runs import DECODER_QUERY, QUERIES, PairTrace, query_name, trace_pair
from txviz.coref.scoring import CrossValidation, SeedStability, cross_validate, cv_by_kind, seed_stability
from txviz.coref.spans import PairAttention

CHUNK = 8  # pairs per cached step: the progress bar moves between steps
ALL_KINDS = ""  # not None: Streamlit shows a None option as no choice at all ("Choose an option")


@dataclass(frozen=True)
class Settings:
    """The pair read, the model's name and where its attention is read from."""

    pair: CorefPair
    name: str
    query: str


@dataclass(frozen=True)
class Scores:
    """The pair's trace and every head's cross-validated score on the set (or one kind of it)."""

    traced: PairTrace
    attentions: list[PairAttention]
    scored: list[int]
    kind: str | None
    cv: CrossValidation
    stability: SeedStability
    n_folds: int
    fold_seed: int

    def of_scored(self) -> list[PairAttention]:
        return [self.attentions[i] for i in self.scored]


# The set is read through the module (coref_pairs.load_pairs, runs.attention_over_pairs), not a name
# bound at import: tests put a smaller set in its place.


@ui.cached(max_entries=64, spinner=False)
@ui.heavy
def pair_trace(loaded, pair: CorefPair, query: str) -> PairTrace:
    return trace_pair(loaded, pair, query)


@ui.cached(max_entries=512, spinner=False)  # 17 chunks of the set per model and reading
@ui.heavy
def chunk_attention(loaded, query: str, start: int) -> list[PairAttention]:
    return runs.attention_over_pairs(loaded, coref_pairs.load_pairs()[start : start + CHUNK], query)


@ui.cached(max_entries=512, spinner=False)
@ui.heavy
def chunk_answers(loaded, method: str, start: int) -> list:
    return answers_over_pairs(loaded, coref_pairs.load_pairs()[start : start + CHUNK], method)


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


def settings(loaded, name: str, pair: CorefPair, where) -> Settings:
    """The page's settings: for a decoder, where its attention is read from (drawn in ``where``)."""
    query = "pronoun"
    if loaded.is_causal:
        query = where.radio(
            "Read attention from",
            QUERIES,
            index=ui.link_index("query", QUERIES, QUERIES.index(DECODER_QUERY)),
            format_func=query_name,
            horizontal=True,
            key="query",
            help="A decoder's pronoun has not read the rest of the sentence yet.",
        )
        where.caption(
            "Default: the last token. In most pairs the deciding word comes after the pronoun, and a "
            "decoder's pronoun cannot see later words: its attention is the same in A and B, so every head "
            "scores exactly 50% there. The last token has read the whole sentence, deciding word included."
        )
    return Settings(pair, name, query)


def set_attention(loaded, settings: Settings, pairs) -> list[PairAttention]:
    """Every head's attention over the set: computed once per model and reading, stored, then read."""
    attentions = coref_stored.find(loaded, pairs, settings.query)
    if attentions is None:
        attentions = over_set(
            f"Scoring every head of {settings.name} on the set (once for this model; kept for every later "
            "visit)...",
            len(pairs),
            lambda start: chunk_attention(loaded, settings.query, start),
        )
        coref_stored.save(loaded, pairs, settings.query, attentions)
    return attentions


def scores(loaded, settings: Settings) -> Scores:
    """The pair traced, and heads scored on the kind of pairs and folds chosen here."""
    pairs = coref_pairs.load_pairs()
    with ui.user_errors():
        traced = pair_trace(loaded, settings.pair, settings.query)
        attentions = set_attention(loaded, settings, pairs)
    for note in traced.notes:
        st.info(note)

    described = load_kinds()
    kinds = [k for k in described if any(p.kind == k for p in pairs)]
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
        chosen = [attentions[i] for i in scored]
        cv = cross_validate(chosen, int(n_folds), int(fold_seed))
        stability = seed_stability(chosen, int(n_folds), range(10))
    return Scores(traced, attentions, scored, kind, cv, stability, int(n_folds), int(fold_seed))


def every_head(loaded, settings: Settings, scores: Scores) -> tuple[int, int]:
    """Every head's preference in both sentences, and the picked head's attention in each; returns it."""
    st.subheader("Every head at once")
    picked = (f"layer_{settings.name}@{loaded.device}", f"head_{settings.name}@{loaded.device}")
    traced = scores.traced
    layer, head = widgets.layer_head_picker(loaded.n_layers, loaded.n_heads, picked, scores.cv.best_head)
    grids = figs.head_grids(traced.attention, (layer, head), ui.presenting())
    for i, (column, grid) in enumerate(zip(ui.figure_columns(3), grids, strict=True)):
        with column:
            widgets.head_grid(grid, f"coref_grid_{i}", picked)
    first, second = traced.attention.candidates
    st.caption(
        f"Each cell: attention from the {query_name(settings.query)} to '{first}' minus to '{second}' "
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
    sentence = settings.pair.sentence_a
    if loaded.is_causal:  # ablation reads next-token logits: decoders only
        widgets.ablate_head_link(settings.name, sentence, layer, head, "sentence A")
    spans = traced.spans_a  # why the pronoun prefers the first candidate to the second, split into parts
    widgets.why_attend_link(
        settings.name, sentence, layer, head, why_query=spans.pronoun[-1], why_key=spans.candidates[0][0],
        why_mode="this key rather than another", why_other=spans.candidates[1][0],
    )  # fmt: skip
    return layer, head


def cv_verdict(cv: CrossValidation) -> str:
    low, _ = cv.coin_flip_band
    if cv.beats_chance:
        return "above the coin-flip band: choosing a head this way beats chance"
    if cv.held_out_accuracy < low:
        return "below the coin-flip band: the chosen heads look at the wrong candidate more than chance"
    return "inside the coin-flip band: no evidence that choosing a head this way beats chance"


def which_heads(loaded, scores: Scores) -> None:
    """The head chosen on the pairs, its cross-validated accuracy against coin flips, and every kind."""
    st.subheader("Which heads track coreference?")
    cv = scores.cv
    low, high = cv.coin_flip_band
    which = "all kinds" if scores.kind is None else f"kind '{scores.kind}'"
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
    st.markdown(
        f"On {which}, a head chosen on {cv.k - 1} folds of pairs and tested on the held-out fold scores "
        f"**{cv.held_out_accuracy:.1%}** over all {cv.n_sentences} held-out sentences (mean over folds "
        f"{cv.mean_fold_accuracy:.1%} ± {cv.fold_spread:.1%}), **{cv_verdict(cv)}**."
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
        f"{scores.stability.sentence} The best of {loaded.n_layers * loaded.n_heads} heads on the pairs it "
        "was chosen on looks better than it is by luck; the held-out numbers do not."
    )
    with st.expander("Every kind at once"):
        pairs = coref_pairs.load_pairs()
        st.dataframe(cv_by_kind(scores.attentions, pairs, scores.n_folds, scores.fold_seed), hide_index=True)


def own_answer(loaded, settings: Settings, scores: Scores, head: tuple[int, int]) -> None:
    """A decoder's own answer to what the pronoun means, beside the picked head's (decoders only)."""
    if not loaded.is_causal:
        return
    st.subheader("The model's own answer")
    pair = settings.pair
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
    for label, verdict in zip("AB", verdicts([scores.traced.attention], [answers], head), strict=True):
        st.write(f"Sentence {label}: {verdict.describe(head)}")
    if st.toggle(f"Compare over the {len(scores.scored)} pairs scored above", key="compare_all"):
        n_pairs = len(coref_pairs.load_pairs())
        with ui.user_errors():
            every = over_set(
                "Asking the model about every pair...",
                n_pairs,
                lambda start: chunk_answers(loaded, method, start),
            )
        summary = compare_over_set(scores.of_scored(), [every[i] for i in scores.scored], head)
        st.write(summary.sentence)
        st.dataframe(summary.rows, hide_index=True)


def il_elle(loaded, settings: Settings, head: tuple[int, int]) -> None:
    """The book's il/elle pair: whether a head links 'it' to the noun whose gender French needs."""
    name, query = settings.name, settings.query
    st.subheader("The book's il/elle example (probml 15.5.1)")
    st.markdown(
        "Translated into French, *it* becomes **il** when it means *l'animal* (masculine) and **elle** when "
        "it means *la rue* (feminine), so a translator must first decide what *it* refers to. **txviz ships "
        "no translation model**: the French below is written by hand. What the model here can show is the "
        f"English half, whether a head of {name} links *it* to the right noun in each sentence."
    )
    with ui.user_errors():
        traced = pair_trace(loaded, translation.book_pair(), query)
    st.dataframe(translation.rows(traced.pair, traced.attention, head), hide_index=True)
    both = translation.heads_getting_both(traced.attention)
    st.caption(
        f"Attention from the {query_name(query)} in layer {head[0]}, head {head[1]} (chosen above), all "
        f"pieces of a word summed. {int(both.sum())} of {both.size} heads of {name} attend more to the right "
        "noun in both sentences, so would point to the right French pronoun in both; a head choosing at random "
        f"does so one time in four. {translation.chance_verdict(traced.attention)} Attending to a noun is not "
        "translating: a translation model would also need the noun's French gender, which nothing here learns."
    )
