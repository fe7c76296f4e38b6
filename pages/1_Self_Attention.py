"""Self-attention step by step: a toy you can edit, several heads, then one real query of a real model."""

from txviz.app import projector, ui
from txviz.selfattention.views import common, efficient, real, toy

ui.setup_page(
    "Self_Attention",
    "Queries, keys and values from the inputs; scores, scaling, softmax and a weighted sum of "
    "values; then several heads mixed by Ω_c; then the same arithmetic on a real model.",
)
# In projector mode the Q, K and V row stays under the inputs X it is computed from: in view at 1280 x 720.
projector.close_stage()

settings = common.sidebar()  # the toy's size, seed and scaling, read by every toy tab
ui.page_tabs(
    {
        "One head, by hand": toy.one_head,
        "Several heads": toy.several_heads,
        "On a real model": real.on_real_model,
        "Shuffle the tokens": toy.shuffle,
        "Additive (Bahdanau)": efficient.additive_scores,
        "Linear attention": efficient.linear_attention,
        "As one matrix (Fig. 12.2)": real.as_one_matrix,
    },
    settings,
)
