"""A fragment rerun asked for on a page the session has since left runs on the page it is on.

A browser's ``run_every`` timer (and a room's push) asks for a fragment with the page it knew then. If
the session switched pages meanwhile - a lecturer's "Next step" while the server is busy with thirty
followers - Streamlit runs the fragment with the old page's hash: its ``new_session`` message tells the
browser the page changed, the browser empties the page, the fragment's first delta then names a place
that no longer exists ("Bad delta path index"), and the frontend drops its connection for good (seen in
`bench lecture`). A fragment cannot change the page, so its run takes the page the session's last run
was on; a fragment that page does not have is skipped by Streamlit as usual.

The rule is here; seeing each run's request needs Streamlit's ScriptRunner, wrapped by
``txviz.app.streamlit_private`` (the one module that touches Streamlit's internals). Where that is off or
lacking, nothing is wrapped and Streamlit runs every request as asked.
"""

from __future__ import annotations

import dataclasses

from txviz.app import streamlit_private


def on_current_page(rerun_data, current_page: str, current_query: str):
    """The rerun to do: a fragment rerun naming another page than ``current_page`` moves to it (and to
    its address's query string)."""
    stale = rerun_data.fragment_id_queue and current_page and rerun_data.page_script_hash != current_page
    if not stale:
        return rerun_data
    return dataclasses.replace(
        rerun_data, page_script_hash=current_page, page_name="", query_string=current_query
    )


def install() -> bool:
    """Guard every script run of this process once; False where the adapter is off or lacking."""
    return streamlit_private.wrap_script_runs(on_current_page)
