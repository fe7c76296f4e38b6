"""Every page's link keeps its view: change the main input, the tab and a selection, take the link,
open it in a fresh session and find the same view (link_views.py says what each page changes)."""

from __future__ import annotations

import ast
import json
from urllib.parse import urlencode

import pytest
from conftest import ROOT, assert_clean
from link_views import VIEWS, changed_view, find, open_link

from txviz.app.navigation import PAGE_FILES


def test_every_page_has_a_link_description():
    missing = [p.stem for p in PAGE_FILES if p.stem not in VIEWS]
    assert not missing, f"say in tests/link_views.py what the link test changes on {missing}"
    assert not set(VIEWS) - {p.stem for p in PAGE_FILES}, "link_views.py names a page that is gone"


@pytest.mark.parametrize("page", PAGE_FILES, ids=lambda p: p.stem)
def test_the_link_reopens_the_same_view(page):
    view = VIEWS.get(page.stem)
    assert view is not None, f"say in tests/link_views.py what the link test changes on {page.stem}"
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


def shared_names(page) -> list[str]:
    """The plain keys of the page's ``setup_page(share=...)`` tuple, read from its source."""
    for node in ast.walk(ast.parse(page.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "setup_page":
            (share,) = [k.value for k in node.keywords if k.arg == "share"]
            return [e.value for e in share.elts if isinstance(e, ast.Constant) and "*" not in e.value]
    raise AssertionError(f"{page.name} calls no ui.setup_page")


@pytest.mark.parametrize("page", PAGE_FILES, ids=lambda p: p.stem)
def test_a_bad_link_falls_back_to_the_defaults(page):
    names = shared_names(page)
    assert names, f"{page.name} keeps nothing in its link"
    start = {k: json.dumps(v) for k, v in VIEWS[page.stem].start.items()}
    bad = {name: GARBAGE[i % len(GARBAGE)] for i, name in enumerate(names) if name not in start}
    app = open_link(page, {**bad, **start})
    assert_clean(app, bad)
