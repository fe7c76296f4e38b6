"""Why attention: a CNN, an RNN and self-attention compared by path length and cost, measured here (Table 15.1)."""

from txviz.app import ui
from txviz.why import views
from txviz.why.views import as_convolution, measured, nested_phrases, path_length

ui.setup_page(
    "Why_Attention",
    "Table 15.1 of the book compares a CNN, an RNN and self-attention mapping x_1..x_n to y_1..y_n. "
    "Here every cell is measured: which inputs each output depends on (from autograd Jacobians of "
    "real torch layers), and what a layer costs (FLOPs counted by torch, wall time on this machine).",
)

sizes = views.sizes()  # the sequence length n and kernel size k, above the tabs
ui.page_tabs(
    {
        "Path length": path_length.show,  # which inputs each output reads, and how fast an RNN forgets
        "Cost": measured.show_cost,  # FLOPs and time against n and d, measured on this machine
        "Table 15.1": measured.show_table,  # the book's table, each cell measured
        "Attention = convolution": as_convolution.show,  # k² hand-set heads reproduce a convolution
        "Nested phrases": nested_phrases.show,  # does a trained encoder's attention group nested phrases?
    },
    sizes,
)
