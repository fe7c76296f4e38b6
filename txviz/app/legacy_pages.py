"""The one workaround for Streamlit's pages/-folder mode, kept in one place so it is easy to drop.

A folder named pages/ beside app.py makes Streamlit run a new server's first visits the legacy way
until some session calls st.navigation (upstream keeps the mode as "a relic of v1 of Multipage apps":
streamlit/streamlit PRs #10276 and #10458; its reviewers saw a direct URL fall back to it). Widget IDs made
in such a run differ from those of every later run, so the first thing a user types would be lost, and
the menu would be Streamlit's own. Such a run never passes through app.py, so it is told apart with public
means alone: app.py marks each run it routes (``routed``), and a page's ``take_over`` that finds no mark on a
live server (an address in ``st.context.url``; an AppTest has none and runs its page alone) declares our
pages and runs again at once. client.showSidebarNavigation would hide our own menu too, so it is no way out.
"""

import threading

import streamlit as st

from txviz.app import navigation

_RUN = threading.local()  # per script thread: whether app.py routed the run under way


def routed() -> None:
    """From app.py, before it runs the page: this run went through st.navigation."""
    _RUN.routed = True


def running_the_folder_way() -> bool:
    """True while Streamlit runs this page the pages/-folder way (a fresh server, before st.navigation);
    read once per run (the mark is used up)."""
    was_routed = getattr(_RUN, "routed", False)
    _RUN.routed = False
    return not was_routed and bool(st.context.url)


def take_over() -> None:
    """Declare our pages and run again at once when a fresh server's first visit opens a page directly."""
    if running_the_folder_way():
        navigation.declare()
        st.rerun()
