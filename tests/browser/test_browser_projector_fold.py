"""Every page of the page map opened in projector mode at 1280 x 720: at least 80% of its first figure is
in the window once the page has run, so the room sees it without scrolling. One browser page visits them
in turn."""

import pytest
from conftest import FIGURE, page_url, screenshot, wait_for_app

from txviz import page_map

pytestmark = pytest.mark.browser

SHOWN = 0.8  # of the first figure's area, inside the window
# The share of the first figure (plotly, vega or image) inside the window, and where it starts.
IN_VIEW = f"""() => {{
  const figure = document.querySelector('{FIGURE}');
  const box = figure.getBoundingClientRect();
  const tall = Math.max(0, Math.min(box.bottom, innerHeight) - Math.max(box.top, 0));
  const wide = Math.max(0, Math.min(box.right, innerWidth) - Math.max(box.left, 0));
  return {{shown: box.width * box.height ? tall * wide / (box.width * box.height) : 0, top: box.top}};
}}"""


def test_every_pages_first_figure_is_in_view_on_a_projector(app_server, browser_page):
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 720})
    below = []
    for entry in page_map.PAGES:
        page.goto(page_url(app_server, entry.file) + "?present=true")
        wait_for_app(page)
        page.wait_for_selector(FIGURE, timeout=180_000)
        wait_for_app(page)  # the whole run: what is drawn after the figure may move it
        view = page.evaluate(IN_VIEW)
        if view["shown"] < SHOWN:
            below.append(f"{entry.name}: {view['shown']:.0%} shown, its top at {view['top']:.0f} px")
            screenshot(page, f"projector-fold-{entry.name}", full_page=False)
    assert not below, "first figure not in view at 1280 x 720 in projector mode:\n" + "\n".join(below)
