"""The course map: every part can be followed without an error, and every link on it opens an existing
page on an existing tab (the tab labels read from the target pages themselves, not listed here)."""

from __future__ import annotations

import json
from collections import defaultdict
from urllib.parse import parse_qsl

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz import page_map
from txviz.coursemap.parts import PARTS

PAGE = str(ROOT / "pages/22_Course_Map.py")
SCRIPTS = {page.name: page.path for page in page_map.PAGES}


def map_links() -> list[tuple[str, dict]]:
    """(target page's URL name, the link's decoded settings) for every link the course map draws."""
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert_clean(at)
    found = []
    for link in at.get("page_link"):
        if link.proto.label.startswith(("Back:", "Next:")):
            continue
        settings = {k: json.loads(v) for k, v in parse_qsl(link.proto.query_string)}
        found.append((link.proto.page.rsplit("/", 1)[-1], settings))
    return found


def test_following_every_part_runs_clean():
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert_clean(at)
    for key in at.selectbox(key="map_part").options:
        at.selectbox(key="map_part").set_value(key).run()
        assert_clean(at, key)
    assert at.info[0].value.startswith("**" + PARTS[-1].name)


def test_every_link_opens_an_existing_page_on_an_existing_tab():
    links = map_links()
    assert len(links) == sum(len(p.links) for p in PARTS)  # every part's every link is drawn
    by_page = defaultdict(list)
    for page, settings in links:
        assert page in SCRIPTS, f"the course map links to {page}, which is not a page"
        by_page[page].append(settings)
    opened = 0
    for page, all_settings in by_page.items():
        tabbed = [s for s in all_settings if s]
        if not tabbed:
            continue  # a page without tabs (Coreference): its existence is the whole check
        first = tabbed[0]
        at = AppTest.from_file(str(SCRIPTS[page]), default_timeout=300)
        at.query_params.update({k: json.dumps(v) for k, v in first.items()})
        at.run()
        assert_clean(at, page)
        labels = {tab.label for tab in at.tabs}
        for settings in tabbed:  # one of the settings names the tab; it must be one of the page's tabs
            tab_settings = {k: v for k, v in settings.items() if k in at.session_state and v in labels}
            assert tab_settings, f"{page}: none of {settings} is a tab of the page ({sorted(labels)})"
        (key, label), *_ = [(k, v) for k, v in first.items() if v in labels]
        assert at.session_state[key] == label, f"{page} opened on {at.session_state[key]}, not {label}"
        opened += 1
    assert opened >= 5  # Self Attention, Positional Encoding, Transformer Block, Masking, Encoder Decoder...
