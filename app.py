"""txviz home: what the app shows, a card for each page, and which device and models are ready."""

from pathlib import Path

import streamlit as st

from txviz import models, ui

ui.setup_page(
    "txviz: see inside transformers",
    "Real models, exact formulas: attention per head and layer, positions, tokenization, masks, "
    "coreference, generation, cross-attention and vision transformers, computed live.",
)

PAGES = sorted(Path(__file__).parent.glob("pages/*.py"), key=lambda p: int(p.name.split("_")[0]))
columns = st.columns(3)
for i, page in enumerate(PAGES):
    title = page.stem.split("_", 1)[1].replace("_", " ")
    with columns[i % 3].container(border=True):
        st.page_link(f"pages/{page.name}", label=title, icon=":material/arrow_forward:")
        doc = (page.read_text().split('"""')[1] if '"""' in page.read_text() else "").strip()
        st.caption(doc.splitlines()[0] if doc else "")

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
