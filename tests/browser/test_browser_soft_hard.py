"""The Soft vs Hard page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import pytest
from conftest import FIGURE, page_url, screenshot, wait_for_app


@pytest.mark.browser
def test_page_in_a_browser(app_server, browser_page):
    browser_page.goto(page_url(app_server, "pages/7_Soft_vs_Hard.py"))
    wait_for_app(browser_page)
    browser_page.wait_for_selector(FIGURE, timeout=180_000)
    assert browser_page.locator('[data-testid="stPlotlyChart"]').count() >= 4
    assert browser_page.get_by_text("Attention is not not Explanation").first.is_visible()
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, "soft_vs_hard")
