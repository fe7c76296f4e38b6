"""Head detectors: score every head for previous-token, sink, induction and more; attention against
attribution; two models side by side."""

from txviz.app import ui
from txviz.heads import views

ui.setup_page(
    "Head_Detectors",
    "What does each head do? Every head gets a score in [0, 1] per behaviour: the share of its attention "
    "that goes where the behaviour says, averaged over the tokens where the behaviour is possible "
    "(TransformerLens' head detector; Clark et al. 2019; Olsson et al. 2022). A pure previous-token head "
    "scores 1; a head spreading attention evenly over n tokens scores 1/n.",
)

name = ui.model_picker(kinds=("encoder", "decoder"))
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
settings = views.corpus_controls(name)  # the texts and sequences every tab scores on, above the tabs

ui.page_tabs(
    {
        "Detectors": views.detectors,
        "Attention vs attribution": views.attention_vs_attribution,
        "Two models": views.two_models,
    },
    loaded,
    settings,
    key="heads_view",
)
