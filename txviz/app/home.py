"""The home page: a card for each page, grouped as the sidebar is, then which device and models are ready."""

import streamlit as st

from txviz import models
from txviz.app import navigation, ui


def render() -> None:
    """Draw the home page."""
    ui.setup_page(
        "txviz: see inside transformers",
        "Real models, exact formulas: attention per head and layer, positions, tokenization, masks, "
        "coreference, generation, cross-attention and vision transformers, computed live.",
    )
    for title, pairs in navigation.sections().items():
        st.subheader(title)
        columns = st.columns(3)
        for i, (script, page) in enumerate(pairs):
            with columns[i % 3].container(border=True):
                st.page_link(page, label=page.title, icon=":material/arrow_forward:")
                st.caption(navigation.summary(script))

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


if __name__ == "__main__":  # Streamlit runs a page script as __main__
    render()
