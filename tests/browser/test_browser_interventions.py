"""The Interventions page in Chromium: it loads SmolLM2, ablates a head and draws its figures."""

from __future__ import annotations

import pytest
from conftest import FIGURE, page_url, screenshot, wait_for_app


@pytest.mark.browser
def test_page_in_a_browser(app_server, browser_page):
    browser_page.goto(page_url(app_server, "pages/18_Interventions.py"))
    wait_for_app(browser_page)
    browser_page.wait_for_selector(FIGURE, timeout=300_000)
    assert browser_page.locator('[data-testid="stPlotlyChart"]').count() >= 2  # next tokens, attention change
    assert browser_page.get_by_text("Top next token after").first.is_visible()
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, "interventions")
