"""txviz: the navigation over pages/ and the home page (what the app shows, devices and models)."""

from pathlib import Path

import streamlit as st

from txviz import models, ui

PAGE_FILES = sorted(Path(__file__).parent.glob("pages/*.py"), key=lambda p: int(p.name.split("_")[0]))
ICONS = {  # keyed by the page's URL name; one material icon each in the sidebar
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
}


def summary(script: Path) -> str:
    """First line of a page script's docstring, for its card."""
    text = script.read_text()
    return text.split('"""')[1].strip().splitlines()[0] if text.startswith('"""') else ""


def page(script: Path) -> st.Page:
    """A page of the sidebar; the URL is the file name without its number, as links already use."""
    url = script.stem.split("_", 1)[1]
    return st.Page(f"pages/{script.name}", title=url.replace("_", " "), icon=ICONS.get(url), url_path=url)


PAGES = [page(script) for script in PAGE_FILES]


def home() -> None:
    """A card for each page, then which device and models are ready."""
    ui.setup_page(
        "txviz: see inside transformers",
        "Real models, exact formulas: attention per head and layer, positions, tokenization, masks, "
        "coreference, generation, cross-attention and vision transformers, computed live.",
    )
    columns = st.columns(3)
    for i, (script, target) in enumerate(zip(PAGE_FILES, PAGES, strict=True)):
        with columns[i % 3].container(border=True):
            st.page_link(target, label=target.title, icon=":material/arrow_forward:")
            st.caption(summary(script))

    st.subheader("Device and models")
    st.write(
        f"Models run on **{ui.current_device()}**"
        + (" (no CUDA GPU found)." if ui.current_device() == "cpu" else ".")
    )
    st.dataframe(
        [
            {
                "model": m.name,
                "kind": m.kind,
                "parameters": m.parameters,
                "source": m.source,
                "ready": "yes" if m.loadable else f"no: {m.reason}",
                "about": m.description,
            }
            for m in models.available()
        ],
        hide_index=True,
        width="stretch",
    )
    st.caption(
        "Attention weights show where a model routes information, not why it decides: "
        "read them as one signal among others (Jain & Wallace 2019; Wiegreffe & Pinter 2019)."
    )


st.navigation([st.Page(home, title="Home", icon=":material/home:", default=True), *PAGES]).run()
