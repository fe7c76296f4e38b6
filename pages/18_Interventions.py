"""Interventions: ablate, patch and steer heads, MLPs and the residual stream, and see which parts matter."""

from txviz.app import ui
from txviz.interventions import views

ui.setup_page(
    "Interventions",
    "If this head were gone, what would change? Ablate a head, an MLP or an attention edge and read the "
    "next-token metric before and after; patch activations from a clean prompt into a corrupted one to "
    "find where the answer is carried (Meng et al. 2022; Wang et al. 2022), beside the gradient estimate "
    "(Nanda 2023); steer generation along a direction between two sets of prompts (Turner et al. 2023; "
    "Rimsky et al. 2024). Every change is made per call: the shared model is never touched.",
)

name = ui.model_picker(kinds=("decoder",), default="smollm2")
loaded = ui.load_model(name, kinds=("decoder",))
settings = views.prompt(loaded, name)  # one prompt above the tabs: Ablate, Every head and Patch read it

ui.page_tabs(
    {
        "Ablate": views.ablate,
        "Every head": views.every_head,
        "Patch": views.patch,
        "Steer": views.steer,
    },
    loaded,
    settings,
    key="iv_view",
)
