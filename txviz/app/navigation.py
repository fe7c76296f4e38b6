"""The app's navigation: Home, then every script in pages/, titled and addressed by its file name."""

from pathlib import Path

import streamlit as st

from txviz.core import paths

PAGES_DIR = paths.PAGES
HOME_SCRIPT = Path(__file__).with_name("home.py")  # run as a script: its last line draws the page
PAGE_FILES = sorted(PAGES_DIR.glob("*.py"), key=lambda p: int(p.name.split("_")[0]))
ICONS = {  # keyed by the page's URL name: one material icon each in the sidebar
    "Self_Attention": ":material/calculate:",
    "Attention_Explorer": ":material/grid_on:",
    "Positional_Encoding": ":material/waves:",
    "Tokenization": ":material/content_cut:",
    "Masking_Patterns": ":material/filter_alt:",
    "Coreference": ":material/link:",
    "Soft_vs_Hard": ":material/tune:",
    "Live_Generation": ":material/edit_note:",
    "Encoder_Decoder": ":material/swap_horiz:",
    "Vision_Transformer": ":material/image:",
    "Transformer_Block": ":material/account_tree:",
    "Image_GPT": ":material/draw:",
    "Image_Captioning": ":material/closed_caption:",
    "Head_Detectors": ":material/biotech:",
    "Query_Key_Space": ":material/scatter_plot:",
    "Why_Attention": ":material/compare_arrows:",
    "Entailment": ":material/rule:",
    "Long_Documents": ":material/article:",
}


def url_name(script: Path) -> str:
    """pages/2_Attention_Explorer.py -> Attention_Explorer: the page's URL, as shared links use."""
    return script.stem.split("_", 1)[1]


def summary(script: Path) -> str:
    """First line of a page script's docstring, for its card on the home page."""
    text = script.read_text()
    return text.split('"""')[1].strip().splitlines()[0] if text.startswith('"""') else ""


def feature_page(script: Path) -> st.Page:
    """The page of one script in pages/: title, icon and URL all come from its file name."""
    name = url_name(script)
    return st.Page(script, title=name.replace("_", " "), icon=ICONS.get(name), url_path=name)


def feature_pages() -> list[st.Page]:
    """One page per script in pages/, in file-number order."""
    return [feature_page(script) for script in PAGE_FILES]


def all_pages() -> list[st.Page]:
    """Home first, then the feature pages."""
    # Home is given as a script, not as home.render, so this module imports nothing of the app.
    return [st.Page(HOME_SCRIPT, title="Home", icon=":material/home:", default=True), *feature_pages()]
