"""The one workaround for Streamlit's pages/-folder mode, kept in one place so it is easy to drop.

A folder named pages/ beside app.py makes Streamlit run a new server's first visits the legacy way
until some session calls st.navigation. Widget IDs made in such a run differ from those of every
later run, so the first thing a user types would be lost. Streamlit has no public switch for this
(client.showSidebarNavigation would hide our own menu too), so we read its private flag here;
tests/unit/test_legacy_pages.py fails loudly if a Streamlit upgrade removes it.
"""

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from txviz.app import navigation


def running_the_folder_way() -> bool:
    """True while Streamlit runs this app the pages/-folder way (a fresh server, before st.navigation)."""
    return bool(PagesManager.uses_pages_directory)


def take_over() -> None:
    """Declare our pages and run again at once when a fresh server's first visit opens a page directly."""
    if running_the_folder_way():
        st.navigation(navigation.all_pages(), expanded=True)  # every page listed, no "View more"
        st.rerun()
