"""A fragment rerun asked for on a page the session has since left runs on the page it is on.

A browser's ``run_every`` timer (and a room's push) asks for a fragment with the page it knew then. If
the session switched pages meanwhile - a lecturer's "Next step" while the server is busy with thirty
followers - Streamlit runs the fragment with the old page's hash: its ``new_session`` message tells the
browser the page changed, the browser empties the page, the fragment's first delta then names a place
that no longer exists ("Bad delta path index"), and the frontend drops its connection for good (seen in
`bench lecture`). A fragment cannot change the page, so its run takes the page the session's last run
was on; a fragment that page does not have is skipped by Streamlit as usual.

Everything Streamlit-internal sits in ``install``; if what it wraps is missing, nothing changes.
"""

from __future__ import annotations

import dataclasses
import functools

from streamlit.runtime.scriptrunner import get_script_run_ctx

_MARK = "_txviz_fragments_keep_their_page"


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
    """Wrap ScriptRunner's run once per process; False where this Streamlit has no such place."""
    try:
        from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

        run = ScriptRunner._run_script
    except (ImportError, AttributeError):
        return False
    if getattr(run, _MARK, False):
        return True

    @functools.wraps(run)
    def run_on_current_page(self, rerun_data):
        ctx = get_script_run_ctx(suppress_warning=True)  # the script thread's: its last run's page
        if ctx is not None:
            rerun_data = on_current_page(rerun_data, ctx.page_script_hash, ctx.query_string)
        return run(self, rerun_data)

    setattr(run_on_current_page, _MARK, True)
    ScriptRunner._run_script = run_on_current_page
    return True
