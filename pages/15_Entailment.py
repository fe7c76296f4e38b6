"""Entailment: decomposable attention aligns a premise with a hypothesis, compares, sums and classifies."""

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.entailment import contextual, corpus, relatedness, train
from txviz.entailment import figures as figs
from txviz.entailment.equations import tag
from txviz.entailment.model import LABELS, probabilities, run_steps
from txviz.entailment.vectors import MAX_WORDS, WordVectors, read_words

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

ui.setup_page(
    "Entailment",
    "Decomposable attention (Parikh et al. 2016; the book's section 15.4.6) decides whether a premise "
    "entails, contradicts or says nothing about a hypothesis, with no recurrence at all: it aligns "
    "the words of the two sentences (attend), compares each word with what it aligned to (compare), "
    "sums (aggregate) and classifies.",
)


@ui.shared_resource(spinner="Loading the trained models...")
def shipped():
    models, meta = train.load()
    return models, meta


@ui.cached(max_entries=64, spinner="MiniLM reads both sentences...")
@ui.heavy
def minilm_alignment(loaded, premise: tuple, hypothesis: tuple):
    return contextual.alignment(loaded, premise, hypothesis)


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
    premise = read_words(premise_text, "premise")
    hypothesis = read_words(hypothesis_text, "hypothesis")
for notice in (premise.notice, hypothesis.notice):
    if notice:
        st.warning(f"{notice} (This page reads at most {MAX_WORDS} words per sentence.)")

models, meta = shipped()
loaded = ui.load_model("minilm", kinds=("encoder",))
vectors = WordVectors.from_loaded(loaded)  # a view of the model's embeddings, made per run
known = set(meta["vocabulary"])
unknown = sorted({w for w in premise.words + hypothesis.words if w not in known})
if unknown:
    st.info(
        f"{len(unknown)} word{'s' * (len(unknown) > 1)} never seen in training: "
        + ", ".join(f"`{w}`" for w in unknown[:40])
        + (" ..." if len(unknown) > 40 else "")
        + ". Their vectors still come from MiniLM's embeddings, so similar known words help, but the "
        "model has learnt nothing about them."
    )

a, b = vectors(premise.words), vectors(hypothesis.words)
steps = run_steps(models["attention"], a, b, premise.words, hypothesis.words)
bow = probabilities(models["bag_of_words"], a, b)

st.subheader(f"Verdict: {steps.label} ({steps.probabilities.max():.0%})")
ui.show_figure(
    figs.probabilities({"decomposable attention": steps.probabilities, "bag of words": bow}), key="probs"
)
teaching.notice(
    "bag of words sees only which words occur; decomposable attention first lines each hypothesis word "
    "up with the premise's words (step 1 below), so it can tell which words differ from what they align to."
)

st.header("1. Attend")
st.latex(r"e_{ij} = f(a_i)^\top f(b_j) \qquad " + tag("e_ij"))
ui.show_figure(
    figs.word_heatmap(
        steps.e, steps.premise, steps.hypothesis, "Alignment scores e_ij", "e_ij", midpoint=True
    ),
    key="e",
)
st.latex(
    r"\beta_i = \sum_{j=1}^{n} \frac{\exp(e_{ij})}{\sum_{k=1}^{n} \exp(e_{ik})}\, b_j \qquad " + tag("beta_i")
)
st.latex(
    r"\alpha_j = \sum_{i=1}^{m} \frac{\exp(e_{ij})}{\sum_{k=1}^{m} \exp(e_{kj})}\, a_i \qquad "
    + tag("alpha_j")
)
widgets.side_by_side(
    [
        figs.word_heatmap(
            steps.to_b,
            steps.premise,
            steps.hypothesis,
            "Softmax over j (rows sum to 1): β_i",
            "weight",
            presenting=ui.presenting(),
        ),
        figs.word_heatmap(
            steps.to_a,
            steps.premise,
            steps.hypothesis,
            "Softmax over i (columns sum to 1): α_j",
            "weight",
            presenting=ui.presenting(),
        ),
    ],
    keys=["to_b", "to_a"],
)
st.caption(
    "a_i and b_j are word vectors: MiniLM's input embedding of the word (before any attention layer, frozen, "
    "averaged over its pieces) times one learnt 384 x 64 matrix, as Parikh et al. project GloVe. f is a "
    "two-layer ReLU network trained here."
)

st.subheader("Beside it: MiniLM's contextual vectors, untrained for this task")
alignment = minilm_alignment(loaded, premise.words, hypothesis.words)
widgets.side_by_side(
    [
        figs.word_heatmap(
            steps.to_b,
            steps.premise,
            steps.hypothesis,
            "Trained f: softmax over j",
            "weight",
            presenting=ui.presenting(),
        ),
        figs.word_heatmap(
            alignment.to_b,
            steps.premise,
            steps.hypothesis,
            "MiniLM, last layer: softmax over j",
            "weight",
            presenting=ui.presenting(),
        ),
    ],
    keys=["trained_side", "minilm_side"],
)
st.caption(
    "Right: e_ij = f(a_i)^T f(b_j) with a fixed f(x) = x / (|x| √0.1), so e_ij is the cosine over 0.1, "
    "and a_i, b_j MiniLM's last-layer vectors (each sentence encoded alone, pieces averaged per word); "
    "raw dot products would send every word to the longest vector. Without any training for entailment it already aligns "
    "repeated words and near-synonyms; the trained f learns which alignments matter for the label."
)

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

st.header("3. Aggregate")
st.latex(r"v_A = \sum_{i=1}^{m} v_{A,i} \qquad " + tag("v_A"))
st.latex(r"v_B = \sum_{j=1}^{n} v_{B,j} \qquad " + tag("v_B"))
ui.show_figure(figs.sums(steps.sum_a, steps.sum_b), key="sums")

st.header("4. Classify")
st.latex(r"\hat{y} = h([v_A, v_B]) \qquad " + tag("y"))
st.markdown(
    " · ".join(f"**{label}** {p:.3f}" for label, p in zip(LABELS, steps.probabilities, strict=True))
    + f" (bag of words: {bow.max():.3f} {LABELS[int(bow.argmax())]})"
)

st.header("The training data, and what the accuracy means")
att, base = meta["attention"], meta["bag_of_words"]
st.dataframe(
    [
        {
            "model": "decomposable attention",
            "held-out accuracy": att["heldout_accuracy"],
            "train accuracy": att["train_accuracy"],
            "pairs with unseen words": att["unseen_words_accuracy"],
            "swapped-roles probe (neutral)": f"{att['swapped_roles']}",
        },
        {
            "model": "bag of words (no attention)",
            "held-out accuracy": base["heldout_accuracy"],
            "train accuracy": base["train_accuracy"],
            "pairs with unseen words": base["unseen_words_accuracy"],
            "swapped-roles probe (neutral)": f"{base['swapped_roles']}",
        },
    ],
    hide_index=True,
)
config = meta["config"]
st.markdown(
    f"Both trained by `python -m txviz train entailment` (seed {config['seed']}, {config['steps']} steps of "
    f"{config['batch_size']}) on the same {config['train_pairs']:,} generated pairs and scored on the same "
    f"{config['held_out_pairs']:,} held-out pairs (none of them in training), and on 600 pairs that each "
    f"use a word kept out of training ({', '.join(sorted(corpus.UNSEEN))}): there only MiniLM's embedding "
    "of the new word can carry what was learnt about its neighbours. "
    "**No natural-language-inference corpus (SNLI, MultiNLI, SICK) installs from the package registries "
    "here**, so the corpus is generated by templates (`txviz/entailment/corpus.py`): one scene (who, doing "
    "what, where, looking how) and a hypothesis changed by hypernyms, synonyms, dropped or added details, "
    "negation, and incompatible activities, places or adjectives. Its limits: a vocabulary of "
    f"{len(meta['vocabulary'])} words, one sentence shape, and labels decided by rules, so the accuracy says "
    "how well each model learns these rules, not how well it reads English; the lecture's example is far "
    "outside it. The swapped-roles probe ('a dog is chasing a cat' / 'the cat is chasing the dog') shows "
    "a limit of the model itself: it reads each sentence as a set of words, so word order is invisible."
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


@ui.shared_resource(spinner="Loading the relatedness model...")
def relatedness_model():
    return relatedness.load()


st.header("Retargeted: relatedness, 0 to 5")
scorer, related_runs = relatedness_model()
st.markdown(relatedness.__doc__.split("\n\n", 1)[1].replace("\n", " "))
st.metric(
    "Relatedness of the premise and hypothesis above (0 unrelated, 5 the same meaning)",
    f"{relatedness.score(scorer, a, b):.2f}",
)
st.dataframe(relatedness.score_rows(related_runs), hide_index=True)
st.dataframe(relatedness.examples(scorer, related_runs, vectors), hide_index=True)
related = related_runs["config"]
st.caption(
    f"Held-out errors on {related['held_out_pairs']:,} generated pairs never trained on (RMSE and MAE in "
    "score points; Pearson's r is STS-B's measure). Trained by `python -m txviz train relatedness` (seed "
    f"{related['seed']}, {related['steps']:,} steps of {related['batch_size']} on {related['train_pairs']:,} "
    "pairs, about a minute on one CPU thread); the word-overlap line is fitted to the same training pairs. "
    "The gold scores are our rule, not people's judgements as in STS-B."
)
