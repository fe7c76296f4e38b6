"""The Coreference page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import pytest


@pytest.mark.browser
def test_page_in_a_browser(app_server, browser_page):
    from conftest import FIGURE, page_url, screenshot, wait_for_app

    browser_page.goto(page_url(app_server, "pages/6_Coreference.py"))
    wait_for_app(browser_page)
    browser_page.wait_for_selector(FIGURE, timeout=180_000)
    assert browser_page.locator(FIGURE).count() >= 3  # altair head grids and plotly maps
    assert browser_page.get_by_text("one signal, not an explanation").is_visible()
    # the cross-validated result and its chart, scrolled into view for a screenshot
    verdict = browser_page.get_by_text("held-out sentences (mean over folds")
    verdict.scroll_into_view_if_needed()
    assert browser_page.get_by_text("Under 10 fold seeds").is_visible()
    screenshot(browser_page, "coreference_cv")
    browser_page.get_by_text("Write your own").click()
    wait_for_app(browser_page)
    browser_page.get_by_text("Pronoun").first.wait_for(timeout=60_000)
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, "coreference")
