"""Entailment's page body: the two sentences, the four steps of decomposable attention, the training
data, and the relatedness model retargeted from the same word vectors."""

from dataclasses import dataclass

import numpy as np
import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.entailment import contextual, corpus, relatedness, train
from txviz.entailment import figures as figs
from txviz.entailment.equations import tag
from txviz.entailment.model import LABELS, Steps, probabilities, run_steps
from txviz.entailment.vectors import MAX_WORDS, Words, WordVectors, read_words

LECTURE = "The lecture's example (MultiNLI)"
EXAMPLES = {
    "A hypernym": ("A tall man is sprinting in the park.", "The person is running outside."),
    LECTURE: (
        "Conceptually cream skimming has two basic dimensions - product and geography.",
        "Product and geography are what make cream skimming work.",
    ),
    "An incompatible activity": ("A puppy is napping in the kitchen.", "The dog is not running."),
    "Negation": ("A woman is swimming on the beach.", "The lady is not swimming."),
    "An added detail": ("A boy is eating.", "The kid is eating after lunch."),
    "Swapped roles": ("A dog is chasing a cat.", "The cat is chasing the dog."),
}
# The label each example is meant to have (MultiNLI's for the lecture's; swapped roles is a probe
# the model fails: it reads each sentence as a set of words).
MEANT = {
    "A hypernym": "entailment",
    LECTURE: "neutral",
    "An incompatible activity": "entailment",
    "Negation": "contradiction",
    "An added detail": "neutral",
    "Swapped roles": "neutral",
}


@dataclass(frozen=True)
class Sentences:
    """The premise and hypothesis the reader chose, as words."""

    premise: Words
    hypothesis: Words


@dataclass(frozen=True)
class Reading:
    """Both trained models run on the two sentences, with what the page's sections show of them."""

    vectors: WordVectors
    a: np.ndarray
    b: np.ndarray
    steps: Steps
    bow: np.ndarray
    meta: dict


@ui.shared_resource(spinner="Loading the trained models...")
def shipped():
    models, meta = train.load()
    return models, meta


@ui.cached(max_entries=64, spinner="MiniLM reads both sentences...")
@ui.heavy
def minilm_alignment(loaded, premise: tuple, hypothesis: tuple):
    return contextual.alignment(loaded, premise, hypothesis)


@ui.shared_resource(spinner="Loading the relatedness model...")
def relatedness_model():
    return relatedness.load()


def sentences() -> Sentences:
    """The example picker and the two sentence boxes; a sentence cut to MAX_WORDS gets a warning."""
    example = st.selectbox(
        "Example",
        list(EXAMPLES),
        index=ui.link_index("example", list(EXAMPLES)),
        key="example",
        format_func=lambda name: f"{name}: {MEANT[name]}",
        help="The first examples use words the model was trained on. The lecture's example is far outside "
        "its training: all 14 of its words are unseen.",
    )
    default_premise, default_hypothesis = EXAMPLES[example]
    premise_text = st.text_input(
        "Premise",
        ui.link_value("premise", default_premise),
        key=f"premise_{example}",
        max_chars=ui.max_text_chars(),
    )
    hypothesis_text = st.text_input(
        "Hypothesis",
        ui.link_value("hypothesis", default_hypothesis),
        key=f"hypothesis_{example}",
        max_chars=ui.max_text_chars(),
    )
    ui.link_set("premise", premise_text)  # the link's names stay the same whichever example is open
    ui.link_set("hypothesis", hypothesis_text)
    with ui.user_errors():
        chosen = Sentences(read_words(premise_text, "premise"), read_words(hypothesis_text, "hypothesis"))
    for notice in (chosen.premise.notice, chosen.hypothesis.notice):
        if notice:
            st.warning(f"{notice} (This page reads at most {MAX_WORDS} words per sentence.)")
    return chosen


def read(loaded, settings: Sentences, trained) -> Reading:
    """Both trained models on the sentences, after a note naming the words never seen in training."""
    models, meta = trained
    premise, hypothesis = settings.premise.words, settings.hypothesis.words
    vectors = WordVectors.from_loaded(loaded)  # a view of the model's embeddings, made per run
    known = set(meta["vocabulary"])
    unknown = sorted({w for w in premise + hypothesis if w not in known})
    if unknown:
        st.info(
            f"{len(unknown)} word{'s' * (len(unknown) > 1)} never seen in training: "
            + ", ".join(f"`{w}`" for w in unknown[:40])
            + (" ..." if len(unknown) > 40 else "")
            + ". Their vectors still come from MiniLM's embeddings, so similar known words help, but the "
            "model has learnt nothing about them."
        )
    a, b = vectors(premise), vectors(hypothesis)
    steps = run_steps(models["attention"], a, b, premise, hypothesis)
    return Reading(vectors, a, b, steps, probabilities(models["bag_of_words"], a, b), meta)


def _weights(weights, steps: Steps, title: str):
    """A premise x hypothesis map of attention weights, one of a pair side by side."""
    return figs.word_heatmap(
        weights, steps.premise, steps.hypothesis, title, "weight", presenting=ui.presenting()
    )


def verdict(loaded, reading: Reading) -> None:
    """Both models' class probabilities, the attention model's label as the heading."""
    steps = reading.steps
    st.subheader(f"Verdict: {steps.label} ({steps.probabilities.max():.0%})")
    ui.show_figure(
        figs.probabilities({"decomposable attention": steps.probabilities, "bag of words": reading.bow}),
        key="probs",
    )
    teaching.notice(
        "bag of words sees only which words occur; decomposable attention first lines each hypothesis word "
        "up with the premise's words (step 1 below), so it can tell which words differ from what they "
        "align to."
    )


def attend(loaded, reading: Reading) -> None:
    """Step 1: the alignment scores and both softmaxes, then MiniLM's untrained alignment beside them."""
    steps = reading.steps
    st.header("1. Attend")
    st.latex(r"e_{ij} = f(a_i)^\top f(b_j) \qquad " + tag("e_ij"))
    ui.show_figure(
        figs.word_heatmap(
            steps.e, steps.premise, steps.hypothesis, "Alignment scores e_ij", "e_ij", midpoint=True
        ),
        key="e",
    )
    st.latex(
        r"\beta_i = \sum_{j=1}^{n} \frac{\exp(e_{ij})}{\sum_{k=1}^{n} \exp(e_{ik})}\, b_j \qquad "
        + tag("beta_i")
    )
    st.latex(
        r"\alpha_j = \sum_{i=1}^{m} \frac{\exp(e_{ij})}{\sum_{k=1}^{m} \exp(e_{kj})}\, a_i \qquad "
        + tag("alpha_j")
    )
    widgets.side_by_side(
        [
            _weights(steps.to_b, steps, "Softmax over j (rows sum to 1): β_i"),
            _weights(steps.to_a, steps, "Softmax over i (columns sum to 1): α_j"),
        ],
        keys=["to_b", "to_a"],
    )
    st.caption(
        "a_i and b_j are word vectors: MiniLM's input embedding of the word (before any attention layer, "
        "frozen, averaged over its pieces) times one learnt 384 x 64 matrix, as Parikh et al. project "
        "GloVe. f is a two-layer ReLU network trained here."
    )

    st.subheader("Beside it: MiniLM's contextual vectors, untrained for this task")
    alignment = minilm_alignment(loaded, steps.premise, steps.hypothesis)
    widgets.side_by_side(
        [
            _weights(steps.to_b, steps, "Trained f: softmax over j"),
            _weights(alignment.to_b, steps, "MiniLM, last layer: softmax over j"),
        ],
        keys=["trained_side", "minilm_side"],
    )
    st.caption(
        "Right: e_ij = f(a_i)^T f(b_j) with a fixed f(x) = x / (|x| √0.1), so e_ij is the cosine over 0.1, "
        "and a_i, b_j MiniLM's last-layer vectors (each sentence encoded alone, pieces averaged per word); "
        "raw dot products would send every word to the longest vector. Without any training for entailment "
        "it already aligns repeated words and near-synonyms; the trained f learns which alignments matter "
        "for the label."
    )


def compare(loaded, reading: Reading) -> None:
    """Step 2: each word compared with what it aligned to."""
    steps = reading.steps
    st.header("2. Compare")
    st.latex(r"v_{A,i} = g([a_i, \beta_i]),\ i = 1..m \qquad " + tag("v_A,i"))
    st.latex(r"v_{B,j} = g([b_j, \alpha_j]),\ j = 1..n \qquad " + tag("v_B,j"))
    widgets.side_by_side(
        [
            figs.vectors_heatmap(
                steps.v_a, steps.premise, "v_A,i: each premise word compared", "v_A", ui.presenting()
            ),
            figs.vectors_heatmap(
                steps.v_b, steps.hypothesis, "v_B,j: each hypothesis word compared", "v_B", ui.presenting()
            ),
        ],
        keys=["v_a", "v_b"],
    )


def aggregate(loaded, reading: Reading) -> None:
    """Step 3: each side's comparisons summed."""
    st.header("3. Aggregate")
    st.latex(r"v_A = \sum_{i=1}^{m} v_{A,i} \qquad " + tag("v_A"))
    st.latex(r"v_B = \sum_{j=1}^{n} v_{B,j} \qquad " + tag("v_B"))
    ui.show_figure(figs.sums(reading.steps.sum_a, reading.steps.sum_b), key="sums")


def classify(loaded, reading: Reading) -> None:
    """Step 4: the class probabilities, with the bag of words' verdict beside them."""
    st.header("4. Classify")
    st.latex(r"\hat{y} = h([v_A, v_B]) \qquad " + tag("y"))
    bow = reading.bow
    st.markdown(
        " · ".join(
            f"**{label}** {p:.3f}" for label, p in zip(LABELS, reading.steps.probabilities, strict=True)
        )
        + f" (bag of words: {bow.max():.3f} {LABELS[int(bow.argmax())]})"
    )


def _scores(model: str, run: dict) -> dict:
    """One model's row of the accuracy table."""
    return {
        "model": model,
        "held-out accuracy": run["heldout_accuracy"],
        "train accuracy": run["train_accuracy"],
        "pairs with unseen words": run["unseen_words_accuracy"],
        "swapped-roles probe (neutral)": f"{run['swapped_roles']}",
    }


def training_data(loaded, reading: Reading) -> None:
    """Both models' accuracies, the generated corpus and what its limits mean for them."""
    meta = reading.meta
    st.header("The training data, and what the accuracy means")
    att, base = meta["attention"], meta["bag_of_words"]
    st.dataframe(
        [_scores("decomposable attention", att), _scores("bag of words (no attention)", base)],
        hide_index=True,
    )
    config = meta["config"]
    st.markdown(
        f"Both trained by `python -m txviz train entailment` (seed {config['seed']}, {config['steps']} steps "
        f"of {config['batch_size']}) on the same {config['train_pairs']:,} generated pairs and scored on the "
        f"same {config['held_out_pairs']:,} held-out pairs (none of them in training), and on 600 pairs that "
        f"each use a word kept out of training ({', '.join(sorted(corpus.UNSEEN))}): there only MiniLM's "
        "embedding of the new word can carry what was learnt about its neighbours. "
        "**No natural-language-inference corpus (SNLI, MultiNLI, SICK) installs from the package registries "
        "here**, so the corpus is generated by templates (`txviz/entailment/corpus.py`): one scene (who, "
        "doing what, where, looking how) and a hypothesis changed by hypernyms, synonyms, dropped or added "
        "details, negation, and incompatible activities, places or adjectives. Its limits: a vocabulary of "
        f"{len(meta['vocabulary'])} words, one sentence shape, and labels decided by rules, so the accuracy "
        "says how well each model learns these rules, not how well it reads English; the lecture's example "
        "is far outside it. The swapped-roles probe ('a dog is chasing a cat' / 'the cat is chasing the "
        "dog') shows a limit of the model itself: it reads each sentence as a set of words, so word order "
        "is invisible."
    )
    with st.expander("Held-out accuracy per rule, and sample pairs"):
        st.dataframe(
            [
                {"rule": rule, "attention": att["by_rule"][rule], "bag of words": base["by_rule"][rule]}
                for rule in att["by_rule"]
            ],
            hide_index=True,
        )
        st.dataframe([vars(p) for p in corpus.generate(12, seed=config["seed"])], hide_index=True)


def relatedness_scores(loaded, reading: Reading) -> None:
    """The same word vectors retargeted to a 0-5 relatedness score, with its held-out errors."""
    st.header("Retargeted: relatedness, 0 to 5")
    scorer, related_runs = relatedness_model()
    st.markdown(relatedness.__doc__.split("\n\n", 1)[1].replace("\n", " "))
    st.metric(
        "Relatedness of the premise and hypothesis above (0 unrelated, 5 the same meaning)",
        f"{relatedness.score(scorer, reading.a, reading.b):.2f}",
    )
    st.dataframe(relatedness.score_rows(related_runs), hide_index=True)
    st.dataframe(relatedness.examples(scorer, related_runs, reading.vectors), hide_index=True)
    related = related_runs["config"]
    st.caption(
        f"Held-out errors on {related['held_out_pairs']:,} generated pairs never trained on (RMSE and MAE "
        "in score points; Pearson's r is STS-B's measure). Trained by `python -m txviz train relatedness` "
        f"(seed {related['seed']}, {related['steps']:,} steps of {related['batch_size']} on "
        f"{related['train_pairs']:,} pairs, about a minute on one CPU thread); the word-overlap line is "
        "fitted to the same training pairs. The gold scores are our rule, not people's judgements as in "
        "STS-B."
    )
