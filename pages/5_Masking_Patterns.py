"""Masking patterns: which pairs attention computes, what a pattern does to a real model, and what it saves."""

from txviz.app import projector, ui
from txviz.masks import views

ui.setup_page(
    "Masking_Patterns",
    "A mask says which keys each query may see. Sparse patterns compute fewer pairs: look at them, "
    "apply them to a real model, and time a block-sparse kernel against dense attention.",
)
# In projector mode the mask stays beside its controls, in view at 1280 x 720.
projector.close_stage()
ui.page_tabs(
    {
        "Gallery": views.gallery,
        "On a real model": views.on_a_real_model,
        "Real cost": views.real_cost,
        "Images (Swin)": views.swin,
        "GPT vs BERT objectives": views.objectives,
        "Using the encoder": views.using_the_encoder,
        "Why a decoder needs its mask": views.why_the_mask,
    }
)
