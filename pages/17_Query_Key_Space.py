"""The query-key space of a head: every token's query and key in one 2-D map, as in AttentionViz."""

from txviz.app import ui
from txviz.explorer.views import query_key as views

ui.setup_page(
    "Query_Key_Space",
    "Each token has a query (what it looks for) and a key (what it offers); a head's attention from "
    "token i to token j grows with q_i . k_j. Here the queries and keys of every token of a few texts "
    "share one 2-D map (Yeh et al. 2023, AttentionViz): a query near a key usually attends to it.",
)

name = ui.model_picker(kinds=("encoder", "decoder"))
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
settings = views.controls(name, loaded)  # the texts, traced, and the head and projection to draw
ui.page_tabs(
    {"One head": views.one_head, "Every head of a layer": views.every_head},
    loaded,
    settings,
    key="qk_view",
)
views.what_the_map_keeps()
