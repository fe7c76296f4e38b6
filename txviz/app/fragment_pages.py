"""Two guards for fragment reruns on a busy server, where a browser would otherwise stop (its frontend
cannot place a delta: "Bad delta path index", and it drops its connection for good).

A fragment rerun asked for on a page the session has since left runs on the page it is on:

A browser's ``run_every`` timer (and a room's push) asks for a fragment with the page it knew then. If
the session switched pages meanwhile - a lecturer's "Next step" while the server is busy with thirty
followers - Streamlit runs the fragment with the old page's hash: its ``new_session`` message tells the
browser the page changed, the browser empties the page, the fragment's first delta then names a place
that no longer exists ("Bad delta path index"), and the frontend drops its connection for good (seen in
`bench lecture`). A fragment cannot change the page, so its run takes the page the session's last run
was on; a fragment that page does not have is skipped by Streamlit as usual.

A fragment run that starts before the full run ahead of it reached the browser keeps that run's deltas.
Streamlit clears the fragment's queued deltas when its rerun starts (it redraws them), but those a full
run wrote a moment before are still queued on a busy server (the queue is sent every 5 ms, when the event
loop gets to it): dropped, the browser gets the full run's next element at a place after a gap and stops
(seen in `bench lecture`: a follower's page switch, then at once a push's rerun of its bar). Kept, the
fragment's redraw replaces them at the same places.

The rules are here; seeing each run's request and the queue's clearing needs Streamlit's internals,
wrapped by ``txviz.app.streamlit_private`` (the one module that touches them). Where that is off or
lacking, nothing is wrapped and Streamlit runs as it does.
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


def holds_full_run(queued) -> bool:
    """Whether messages queued for the browser hold part of a full run (a delta outside every fragment:
    a fragment run writes none), which a fragment run starting now must not cut."""
    return any(m.WhichOneof("type") == "delta" and not m.delta.fragment_id for m in queued)


def install() -> bool:
    """Guard every script run and queue of this process once; False where the adapter is off or lacking."""
    runs = streamlit_private.wrap_script_runs(on_current_page)
    return streamlit_private.wrap_fragment_clears(holds_full_run) and runs
