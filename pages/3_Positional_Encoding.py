"""Positional encoding lab: sinusoids, binary positions, shifts as rotations, learned and rotary positions."""

from txviz.app import ui
from txviz.positional import views

ui.setup_page(
    "Positional_Encoding",
    "Attention alone ignores order; positions are added to the tokens. The sinusoidal table of "
    "Vaswani et al., its binary ancestor, why a shift is a rotation, and what MiniLM learned and "
    "SmolLM2 rotates instead.",
)
settings = views.sidebar()
ui.page_tabs(
    {
        "Sinusoids": views.sinusoids,
        "Binary": views.binary,
        "Shift = rotation": views.shift,
        "Similarity": views.position_similarity,
        "Learned (MiniLM)": views.learned_positions,
        "Rotary (SmolLM2)": views.rotary_positions,
        "X + P": views.x_plus_p,
        "Relative (Shaw)": views.relative_positions,
        "Add = concatenate": views.add_as_concatenate,
        "FLOATER": views.floater_flow,
    },
    settings,
)
