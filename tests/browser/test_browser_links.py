"""Links in Chromium: move a slider and open a tab, copy the link from the sidebar control, open it in
a fresh browser context and find the same tab and value (screenshots test-artifacts/link-*.png); and
every page's link, made by changing its view as link_views.py says, opened in a fresh browser."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlparse

import pytest
from link_views import VIEWS, changed_view

from txviz import page_map

# (page, tab to open, slider label, arrow key moving it one step); pages whose view is cheap to draw
CASES = [
    ("pages/3_Positional_Encoding.py", "Shift = rotation", "Positions n", "ArrowLeft"),
    ("pages/1_Self_Attention.py", "Several heads", "N tokens", "ArrowRight"),
    ("pages/2_Attention_Explorer.py", "Token focus", "Layer", "ArrowRight"),
]


def slider(page, label: str):
    return page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider")


def copied_link(page) -> str:
    """The address the sidebar's copy-link control shows (what its copy button copies)."""
    page.get_by_role("button", name="Copy link").click()
    code = page.locator('[data-testid="stPopoverBody"] [data-testid="stCode"]')
    code.wait_for(timeout=30_000)
    return code.inner_text().strip()


@pytest.mark.browser
@pytest.mark.parametrize("script, tab, label, key", CASES, ids=lambda v: str(v).split("/")[-1])
def test_a_copied_link_opens_the_same_view(app_server, _browser, browser_page, script, tab, label, key):
    from conftest import FIGURE, page_url, screenshot, wait_for_app

    page = browser_page
    page.goto(page_url(app_server, script))
    wait_for_app(page)
    page.get_by_role("tab", name=tab).click()
    wait_for_app(page)
    thumb = slider(page, label)
    before = thumb.input_value()
    thumb.focus()
    thumb.press(key)
    page.wait_for_timeout(500)
    wait_for_app(page)
    value = slider(page, label).input_value()
    assert value != before
    link = copied_link(page)
    name = script.split("/")[-1].split("_", 1)[1].removesuffix(".py").lower()
    screenshot(page, f"link-control-{name}")
    assert link.startswith(page_url(app_server, script) + "?"), link

    context = _browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        fresh = context.new_page()
        fresh.goto(link)
        wait_for_app(fresh)
        fresh.locator(FIGURE).first.wait_for(timeout=180_000)
        assert fresh.locator('[data-testid="stException"]').count() == 0
        assert fresh.get_by_role("tab", name=tab).get_attribute("aria-selected") == "true"
        restored = slider(fresh, label)
        assert restored.input_value() == value
        restored.scroll_into_view_if_needed()  # the screenshot shows the restored value
        screenshot(fresh, f"link-{name}")
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.parametrize("page", page_map.PAGES, ids=lambda p: p.name)
def test_every_pages_link_opens_its_view_in_a_fresh_browser(app_server, _browser, page):
    from conftest import page_url, wait_for_app

    script = page.path
    app, _ = changed_view(script, VIEWS[page.name])  # the view changed in a session of its own
    link = dict(app.query_params)
    context = _browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        fresh = context.new_page()
        fresh.goto(page_url(app_server, page.name) + "?" + urlencode(link))
        wait_for_app(fresh)
        assert fresh.locator('[data-testid="stException"]').count() == 0
        tab = VIEWS[page.name].tab
        if tab:
            assert fresh.get_by_role("tab", name=tab[1], exact=True).get_attribute("aria-selected") == "true"
        # A rerun ("r") writes the page's settings back to the address: a lost value would read its default.
        fresh.locator("h1").first.click()
        fresh.keyboard.press("r")
        fresh.wait_for_timeout(500)
        wait_for_app(fresh)
        shown = dict(parse_qsl(urlparse(fresh.url).query))
        assert {k: shown.get(k) for k in link} == link
    finally:
        context.close()
