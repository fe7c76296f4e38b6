"""Vision transformer: an image cut into patches, and where each head of the model looks."""

from txviz.app import ui
from txviz.vision import views

ui.setup_page(
    "Vision_Transformer",
    "A vision transformer cuts the image into square patches, reads them as a sequence with a "
    "[CLS] token in front, and classifies from what [CLS] gathers. Pick a sample or upload a "
    "picture, then see where each head of each layer looks.",
)

# The model is picked inside the first tab: the book's tab runs none.
ui.page_tabs(
    {
        "This model's attention": views.model_attention,
        "ViT-Base as the books draw it": views.book_patches,
        "SAGAN and DETR": views.sagan_and_detr,
    },
    key="vit_view",
)
