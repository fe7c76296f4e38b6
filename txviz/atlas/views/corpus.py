"""The corpus a reader picks for a build over many windows (the Head Atlas's, the Features page's): one an
installed package ships, or an upload."""

from __future__ import annotations

import streamlit as st

from txviz.app import ui, widgets
from txviz.atlas import corpus as corpora
from txviz.atlas import opening

UPLOAD = "Upload a text file"


@ui.shared_resource(max_entries=4)
def _shipped(corpus_name: str):
    return opening.shipped()[corpus_name]()


def corpus_choice(key: str = "atlas_corpus"):
    """The corpus: one an installed package ships, or an upload (the radio's link key ``key``)."""
    names = [*opening.shipped(), UPLOAD]
    choice = widgets.linked_radio("Corpus", names, key)
    if choice != UPLOAD:
        return _shipped(choice)
    file = st.file_uploader(
        f"A UTF-8 text file (the first {corpora.MAX_UPLOAD_BYTES:,} bytes are read)",
        type=["txt", "md", "py", "rst"],
        key=f"{key}_upload",
    )
    if file is None:
        st.info("Choose a text file: the corpus is read from its tokens.")
        st.stop()
    with ui.user_errors():
        return opening.from_upload(file.name, ui.checked_upload(file))
