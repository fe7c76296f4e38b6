"""Entailment: decomposable attention aligns a premise with a hypothesis, compares, sums and classifies."""

from txviz.app import ui
from txviz.entailment import views

ui.setup_page(
    "Entailment",
    "Decomposable attention (Parikh et al. 2016; the book's section 15.4.6) decides whether a premise "
    "entails, contradicts or says nothing about a hypothesis, with no recurrence at all: it aligns "
    "the words of the two sentences (attend), compares each word with what it aligned to (compare), "
    "sums (aggregate) and classifies.",
)

sentences = views.sentences()  # an example, its premise and hypothesis
trained = views.shipped()
loaded = ui.load_model("minilm", kinds=("encoder",))
reading = views.read(loaded, sentences, trained)

# The page has no tabs: its sections follow one another, in the order of the method.
views.verdict(loaded, reading)
views.attend(loaded, reading)  # 1. alignment scores, both softmaxes, and MiniLM's untrained alignment
views.compare(loaded, reading)  # 2.
views.aggregate(loaded, reading)  # 3.
views.classify(loaded, reading)  # 4.
views.training_data(loaded, reading)
views.relatedness_scores(loaded, reading)
