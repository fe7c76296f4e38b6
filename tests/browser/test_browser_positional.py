"""The Positional Encoding page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import pytest

PAGE = "pages/3_Positional_Encoding.py"


@pytest.mark.browser
def test_every_tab_in_the_browser(app_server, browser_page):
    from conftest import FIGURE, page_url, screenshot, wait_for_app

    page = browser_page
    page.goto(page_url(app_server, PAGE))
    wait_for_app(page)
    page.wait_for_selector(FIGURE, timeout=180_000)
    for tab in (
        "Sinusoids",
        "Binary",
        "Shift = rotation",
        "Similarity",
        "Learned (MiniLM)",
        "Rotary (SmolLM2)",
        "X + P",
    ):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(500)
        wait_for_app(page)
        panel = page.get_by_role("tabpanel")
        panel.locator(FIGURE).first.wait_for(timeout=180_000)
        assert page.locator('[data-testid="stException"]').count() == 0, tab
        screenshot(page, "positional_" + "".join(c if c.isalnum() else "_" for c in tab))
