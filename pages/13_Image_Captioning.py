"""Image captioning: soft attention averages image regions, hard attention picks one, word by word."""

from txviz.app import ui
from txviz.captioning import views

ui.setup_page(
    "Image_Captioning",
    "Two captioners read a canvas of handwritten digits and write them in reading order. While writing "
    "each word, one attends softly (a weighted average of all 64 patches, trained by backprop) and the "
    "other hard (it reads one sampled patch, trained with REINFORCE). After Xu et al. 2015 (probml fig. 15.22).",
)

with ui.user_errors():
    models, meta = views.captioners()
views.scores_caption(meta)

# One view, no tabs: the canvas, then both captioners on it.
canvas = views.choose_canvas()
views.captions(models, meta["runs"], canvas)
