"""Image GPT: a transformer decoder draws digits pixel by pixel, and completes the lower half of one."""

from txviz.app import ui
from txviz.imagegpt import data, views

ui.setup_page(
    "Image_GPT",
    "Pixels as tokens: a small GPT-2 reads an 8 x 8 digit as 64 pixels in raster order, each one of "
    f"{data.N_LEVELS} grey levels, and draws one pixel at a time, each from a distribution over the "
    f"{data.N_LEVELS} levels that depends on every pixel "
    "before it (Understanding Deep Learning, fig. 12.16). Given the top half, it completes the rest.",
)
loaded = ui.load_model(views.MODEL, kinds=("image-decoder",))
views.model_caption(loaded)

ui.page_tabs(
    {
        "Draw": views.draw,
        "Complete a held-out digit": views.complete_held_out,
        "Your own image": views.own_image,
        "How good is it?": views.how_good,
    },
    loaded,
)
