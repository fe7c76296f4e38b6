"""Why a head attends: one attention score split exactly into what built the query and what built the key."""

from txviz.app import ui
from txviz.whyattend import views

ui.setup_page(
    "Why_Attend",
    "Where a head looks is one question; why is the next. With each norm's scale frozen at its value in "
    "this run, a head's query and key are linear in the residual stream, and the stream is a sum of the "
    "embeddings, every earlier head's output, every earlier MLP's output and the biases. So the score "
    "q_i . k_j is exactly a sum of (query part) x (key part) pairs, rotary positions included.",
)

name = ui.model_picker(kinds=("encoder", "decoder"))
views.precision_note()  # the page decomposes in float32 whatever the sidebar asks
loaded = ui.load_model(name, kinds=("encoder", "decoder"), dtype="float32")

# The page has no tabs: one edge, explained, then two checks of the explanation.
edge = views.edge(loaded, name)  # the text, the head, the query and key to explain
found = views.explain(loaded, edge)  # the head's clickable map, the score split into pairs
views.patch_check(loaded, edge, found)  # remove the largest part and rerun
views.composition_grid(loaded, edge)  # Q-, K-, V-composition with earlier heads
