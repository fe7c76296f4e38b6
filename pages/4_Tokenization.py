"""BPE merge lab: train byte-pair encoding merge by merge, then see real tokenizers cut your text."""

from txviz.app import ui
from txviz.tokenization import views

ui.setup_page(
    "Tokenization",
    "Byte-pair encoding starts from characters and merges the most frequent adjacent pair, again "
    "and again. Whitespace shows as _, and the first token of a pair may not end in whitespace, "
    "so no token reaches across two words.",
)
ui.page_tabs(
    {
        "Train BPE step by step": views.train_step_by_step,
        "Real tokenizers on your text": views.real_tokenizers,
    },
    key="bpe_view",
)
