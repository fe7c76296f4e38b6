"""The Masking Patterns page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import pytest
from conftest import FIGURE, page_url, screenshot, wait_for_app

PAGE = "pages/5_Masking_Patterns.py"


@pytest.mark.browser
def test_page_in_a_browser(app_server, browser_page):
    browser_page.goto(page_url(app_server, PAGE))
    wait_for_app(browser_page)
    browser_page.wait_for_selector(FIGURE, timeout=180_000)
    for tab in ("Images (Swin)", "Real cost"):
        browser_page.get_by_role("tab", name=tab).click()
        wait_for_app(browser_page)
        browser_page.wait_for_selector(FIGURE, timeout=180_000)
        assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, "masking_patterns_cost")
