"""The app's navigation: Home, then every script in pages/ in its section, titled and addressed by
its file name (so links keep working whichever section a page sits in)."""

from pathlib import Path

import streamlit as st

from txviz.core import paths

PAGES_DIR = paths.PAGES
HOME_SCRIPT = Path(__file__).with_name("home.py")
# The browser tab's icon, drawn by the page itself (Streamlit makes an emoji an inline SVG). It is set before
# st.navigation: without one, Streamlit's frontend takes the open page's sidebar icon, a :material/...:
# name, for the tab and fetches it as an SVG from fonts.gstatic.com, the one request outside this server
# (it fails offline with a console error). The sidebar's icons come from the font Streamlit bundles.
FAVICON = "🔍"  # run as a script: its last line draws the page
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
    "Head_Atlas": ":material/travel_explore:",
    "Query_Key_Space": ":material/scatter_plot:",
    "Why_Attend": ":material/join_inner:",
    "Why_Attention": ":material/compare_arrows:",
    "Entailment": ":material/rule:",
    "Interventions": ":material/content_cut:",
    "Long_Documents": ":material/article:",
    "Course_Map": ":material/map:",
    "Lectures": ":material/school:",
    "Lecture_Room": ":material/co_present:",
}


SECTIONS = {  # sidebar and home-page groups, in order; every page sits in exactly one
    "Attention": (
        "Course_Map",
        "Self_Attention",
        "Attention_Explorer",
        "Masking_Patterns",
        "Soft_vs_Hard",
        "Why_Attention",
    ),
    "Inside the model": (
        "Tokenization",
        "Positional_Encoding",
        "Transformer_Block",
        "Live_Generation",
        "Encoder_Decoder",
    ),
    "Systems from the textbooks": (
        "Coreference",
        "Entailment",
        "Vision_Transformer",
        "Image_GPT",
        "Image_Captioning",
    ),
    "Research tools": (
        "Head_Detectors",
        "Head_Atlas",
        "Query_Key_Space",
        "Why_Attend",
        "Interventions",
        "Long_Documents",
    ),
    "Teaching": ("Lectures", "Lecture_Room"),
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


def sections() -> dict[str, list[tuple[Path, st.Page]]]:
    """Each section's (script, page) pairs, in SECTIONS' order; a page missing from SECTIONS goes last."""
    by_name = {url_name(script): script for script in PAGE_FILES}
    grouped = {
        title: [by_name[name] for name in names if name in by_name] for title, names in SECTIONS.items()
    }
    placed = {name for names in SECTIONS.values() for name in names}
    others = [script for name, script in by_name.items() if name not in placed]
    if others:
        grouped["More"] = others
    return {
        title: [(script, feature_page(script)) for script in scripts] for title, scripts in grouped.items()
    }


def home_page() -> st.Page:
    """The home page, the app's default."""
    # Given as a script, not as home.render, so this module imports nothing of the app.
    return st.Page(HOME_SCRIPT, title="Home", icon=":material/home:", default=True)


def declare() -> st.Page:
    """Every page to st.navigation, after the tab's icon of our own (FAVICON, not a page's material
    icon); returns the page this run opens."""
    st.set_page_config(page_icon=FAVICON)
    return st.navigation(all_pages(), expanded=True)  # every page listed, no "View more"


def all_pages() -> dict[str, list[st.Page]]:
    """Home first (in no section), then each section's pages, for st.navigation."""
    return {"": [home_page()]} | {title: [page for _, page in pairs] for title, pairs in sections().items()}
