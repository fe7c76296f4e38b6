"""Live generation: tokens appear one by one, with what each step considered and attended to."""

from txviz.app import ui
from txviz.explain import views as explain
from txviz.generation import views
from txviz.generation.loop import check_model

ui.setup_page(
    "Live_Generation",
    "A causal language model writes one token at a time: at every step it scores every token of "
    "its vocabulary, a sampling rule picks one, and the new token attends to all earlier ones "
    "through the KV cache. Attention weights show where a head looked, not why the model chose.",
)

name = ui.model_picker(kinds=("decoder",), default="smollm2", key="gen_model")
loaded = ui.load_model(name)
with ui.user_errors():
    check_model(loaded)
settings = views.settings(loaded, name)

run = views.generation(loaded, settings)  # the run as it is made; a first-token preview and a stop before
shown = views.replay(run)
ui.page_tabs(
    {
        "This head": views.this_head,
        "All heads": views.all_heads,
        "Whole sequence": views.whole_sequence,
        "KV cache": views.kv_cache,
    },
    shown,
    key="gen_view",
)
explain.inspector(loaded, run["model"], run["prompt"], shown.steps, shown.index, shown.layer, shown.head)
