"""The grammar model's tab: one tiny encoder-decoder that parses, tags, counts and translates by prefix,
its held-out exact match beside baselines, and each output token's cross-attention over the source."""

from __future__ import annotations

import numpy as np
import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.core.threads import torch_threads
from txviz.figures.attention import attention_heatmap
from txviz.grammar import language as lang
from txviz.grammar import model as grammar_model
from txviz.grammar import results

TAB_LABEL = "Grammar as a foreign language"
EXAMPLES = {
    "parse:": "the old dog from the barn chased a cat in the park",
    "tag:": "a hungry owl slept near the river",
    "count:": "the cow from the field followed the horse behind the house",
    "translate:": "the animal did not cross the street because it was tired",
}
SET_LABELS = {
    "parse": "parse: unseen subject-verb pairs",
    "parse (unseen shapes)": "parse: tree shapes never trained on",
    "tag": "tag: unseen subject-verb pairs",
    "count": "count: unseen subject-verb pairs",
    "translate": "translate: unseen animal-place pairs",
}


@ui.shared_resource(spinner="Loading the grammar model...")
def shipped():
    """The shipped model and its runs.json (one copy for every session)."""
    return grammar_model.load()


@ui.shared_resource(max_entries=64, spinner="Running the grammar model...")
@ui.heavy
def attended(source: tuple[str, ...]) -> results.Attended:
    model, _ = shipped()
    with torch_threads(1):
        return results.attend(model, source)


def score_rows(runs: dict) -> list[dict]:
    """One row per held-out set: the model's exact match, the baseline's, and what the baseline is."""
    rows = []
    for name, score in runs["heldout"].items():
        base = runs["baselines"][name]
        rows.append({
            "held-out set": SET_LABELS.get(name, name),
            "sentences": score["n"],
            "model: exact match": score["exact"],
            "baseline": base["baseline"],
            "baseline: exact match": base.get("exact"),
        })  # fmt: skip
        if "pronoun" in score:
            rows.append({
                "held-out set": "translate: the pronoun il/elle", "sentences": score["n"],
                "model: exact match": score["pronoun"], "baseline": base["baseline"],
                "baseline: exact match": base["pronoun"],
            })  # fmt: skip
    return rows


def _source(prefix: str, text: str) -> tuple[str, ...]:
    """The prefix and the sentence's words, checked against the grammar (a UserError-like message)."""
    words = text.lower().replace(".", " ").split()
    if prefix == "translate:":
        return (prefix, *lang.read_pair(" ".join(words)).english())
    lang.parse(words)
    return (prefix, *words)


def show(*_page_args) -> None:
    """The tab (any arguments of the page, such as its loaded model, are ignored: the model is its own)."""
    model, runs = shipped()
    st.markdown(
        "One tiny encoder-decoder, trained here, does four jobs on one set of weights: the first word of "
        "the source says which (decaNLP's framing of every task as a question). **parse:** writes the "
        "sentence's tree as brackets, words replaced by their tags, as in *Grammar as a foreign language* "
        "(Vinyals et al. 2015); **tag:** writes the tags; **count:** the number of nouns; **translate:** "
        "writes French, where *it* becomes *il* or *elle* by the gender of the noun it stands for."
    )
    prefixes = list(lang.PREFIXES)
    left, right = st.columns([1, 3])
    prefix = left.selectbox(
        "Task", prefixes, index=ui.link_index("grammar_task", prefixes), key="grammar_task"
    )
    text = right.text_input(
        "Sentence of the grammar", ui.link_value(f"grammar_text_{prefix[:-1]}", EXAMPLES[prefix]),
        max_chars=ui.max_text_chars(200), key=f"grammar_text_{prefix[:-1]}",
    )  # fmt: skip
    try:
        source = _source(prefix, text)
    except lang.GrammarInputError as error:
        st.error(str(error))
        return
    shown = attended(source)
    _say_output(prefix, source, shown.output)
    layer, head = widgets.layer_head_picker(
        shown.cross.shape[0], shown.cross.shape[1], keys=("grammar_layer", "grammar_head"),
        labels=("Decoder layer", "Cross-attention head"),
    )  # fmt: skip
    mean = st.toggle("Mean over the heads", value=ui.link_value("grammar_mean", False), key="grammar_mean")
    matrix = shown.cross[layer].mean(0) if mean else shown.cross[layer, head]
    which = "mean of the heads" if mean else f"head {head}"
    ui.show_figure(
        attention_heatmap(matrix, tuple(shown.output), tuple(source),
                          f"Cross-attention, decoder layer {layer}, {which}",
                          axis_titles=("output token (writing)", "source token (read)")),
        key="grammar_cross",
    )  # fmt: skip
    teaching.notice(
        "each row is the step that wrote that output token, spread over the source; a tag's row often "
        "lands on its word, and in a translation the row of il/elle shows whether the step read the noun "
        "the pronoun stands for."
    )
    if prefix == "translate:" and results.pronoun(shown.output):
        _pronoun_note(source, shown, layer)
    st.subheader("Held-out sentences")
    st.dataframe(score_rows(runs), hide_index=True, width="stretch")
    config = runs["config"]
    attention = runs["heldout"]["translate"]["pronoun_attention"]["best_head"]
    st.caption(
        f"Encoder {config['encoder_layers']} and decoder {config['decoder_layers']} layers × {config['heads']} "
        f"heads, d = {config['d_model']}; {config['steps']} steps of {config['batch_size']} fresh sentences "
        f"(parse, tag, count, translate in shares {':'.join(map(str, config['shares']))}), seed "
        f"{config['seed']}, {runs['seconds']:.0f} s on one thread of a shared 2-core machine (load average "
        f"{runs['load_average']:.0f}). The pronoun's cross-attention on held-out pairs, decoder layer "
        f"{attention['layer']} head {attention['head']} (the one that best tells them apart): "
        f"{attention['antecedent']:.2f} on its antecedent's noun phrase, {attention['other noun']:.2f} on the "
        f"other's, {attention['adjective']:.2f} on the adjective. Retrain with `python -m txviz train grammar`."
    )


def _say_output(prefix: str, source: tuple[str, ...], output: list[str]) -> None:
    if prefix == "translate:":
        pair = lang.read_pair(" ".join(source[1:]))
        right = output == pair.french()
        st.markdown(f"**Output:** {lang.french_text(output)}")
        st.caption(
            f"The grammar's French: {lang.french_text(pair.french())} ({'the same' if right else 'different'}); "
            f"*it* is the {pair.antecedent}, {'masculine' if pair.gender == 'm' else 'feminine'} in French."
        )
        return
    st.markdown(f"**Output:** `{' '.join(output)}`")
    words = list(source[1:])
    truth = {
        "parse:": lang.parse(words).brackets(),
        "tag:": lang.tags(words),
        "count:": [lang.noun_count(words)],
    }[prefix]
    verdict = "the same as" if output == truth else "different from"
    balance = (
        f" The brackets {'balance' if lang.balanced(output) else 'do not balance'}."
        if prefix == "parse:"
        else ""
    )
    st.caption(f"{verdict.capitalize()} the grammar's own answer: `{' '.join(truth)}`.{balance}")


def _pronoun_note(source: tuple[str, ...], shown: results.Attended, layer: int) -> None:
    pair = lang.read_pair(" ".join(source[1:]))
    at = shown.output.index(results.pronoun(shown.output))
    animal, place = source.index(pair.animal, 1), source.index(pair.place, 3)
    row = shown.cross[layer, :, at]  # (head, source)
    on_animal, on_place = row[:, animal - 1 : animal + 1].sum(-1), row[:, place - 1 : place + 1].sum(-1)
    best = int(np.argmax(np.abs(on_animal - on_place)))
    st.markdown(
        f"Writing **{shown.output[at]}**, decoder layer {layer}'s head {best} puts {on_animal[best]:.2f} on "
        f"*the {pair.animal}* and {on_place[best]:.2f} on *the {pair.place}* ({row[best, -1]:.2f} on "
        f"*{pair.adjective}*); the pronoun stands for the *{pair.antecedent}*."
    )
