"""Every page's link keeps its view: change the main input, the tab and a selection, take the link,
open it in a fresh session and find the same view (link_views.py says what each page changes)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from conftest import ROOT, assert_clean
from link_views import VIEWS, changed_view, find, open_link

from txviz import page_map

PAGES = page_map.PAGES


def test_every_page_has_a_link_description():
    missing = [p.name for p in PAGES if p.name not in VIEWS]
    assert not missing, f"say in tests/link_views.py what the link test changes on {missing}"
    assert not set(VIEWS) - set(page_map.BY_NAME), "link_views.py names a page that is gone"


@pytest.mark.parametrize("entry", PAGES, ids=lambda p: p.name)
def test_the_link_reopens_the_same_view(entry):
    view, page = VIEWS.get(entry.name), entry.path
    assert view is not None, f"say in tests/link_views.py what the link test changes on {entry.name}"
    app, changed = changed_view(page, view)
    link = dict(app.query_params)
    (control,) = [c for c in app.sidebar.code if c.value.startswith("?")]  # the copy-link control
    assert control.value == "?" + urlencode(link)

    fresh = open_link(page, link)
    assert_clean(fresh, "the link")
    if view.tab:
        assert fresh.session_state[view.tab[0]] == view.tab[1]
    for kind, pattern, _ in view.changes:
        widget = find(fresh, kind, pattern)
        assert widget.value == changed[widget.key], (pattern, widget.value, changed[widget.key])


def test_a_changed_tab_survives_the_next_rerun():
    page = ROOT / "pages/3_Positional_Encoding.py"
    app = open_link(page, {"view": json.dumps("Binary")})
    assert app.session_state["view"] == "Binary"
    app.slider(key="n").set_value(50).run()  # any widget: the tabs' default must not move under them
    assert_clean(app)
    assert app.session_state["view"] == "Binary"
    assert app.query_params["view"] == '"Binary"'


GARBAGE = ("{", '"<b>not an option</b>"', "NaN", "true", "[1, 2]", "1e999", "-5")


@pytest.mark.parametrize("entry", PAGES, ids=lambda p: p.name)
def test_a_bad_link_falls_back_to_the_defaults(entry):
    names = [s.key for s in entry.settings if not s.pattern]  # the plain keys of the page's settings
    assert names, f"{entry.name} keeps nothing in its link"
    start = {k: json.dumps(v) for k, v in VIEWS[entry.name].start.items()}
    bad = {name: GARBAGE[i % len(GARBAGE)] for i, name in enumerate(names) if name not in start}
    app = open_link(entry.path, {**bad, **start})
    assert_clean(app, bad)
