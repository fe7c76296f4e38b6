"""Head Atlas: every head of a model scored over a whole corpus once, stored, and given its own page.

A page beside Head Detectors, not inside it: the detectors score one text or a few passages live, in
seconds, for the question at hand; the atlas streams a corpus through the model once, stores every
head's scores and top contexts on disk, and then opens instantly, with a link per head.
"""

from txviz.app import ui
from txviz.atlas.views import head, opened, overview

ui.setup_page(
    "Head_Atlas",
    "What does each head of this model do across a corpus? The atlas runs the corpus through the model "
    "once, in windows, and keeps per head its scores (previous token, induction, sink, local share, "
    "distance, entropy...) and the contexts where it attends most, as token positions; stored on disk, "
    "it opens instantly after. Every head has its own page and link.",
)  # fmt: skip

name = ui.model_picker(kinds=("encoder", "decoder"))
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
# The corpus, the window and the picked head, above the tabs; the page stops here until the atlas is open.
shown = opened.open_atlas(loaded, name)

ui.page_tabs(
    {"Map": overview.map_view, "Head": head.head_view, "Two models": overview.pair_view},
    loaded,
    shown,
    key="atlas_view",
    default=opened.first_tab(),
)
