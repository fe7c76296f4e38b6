"""The Self-Attention page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import pytest

PAGE = "pages/1_Self_Attention.py"


@pytest.mark.browser
def test_in_the_browser(app_server, browser_page):
    from conftest import FIGURE, page_url, screenshot, wait_for_app

    page = browser_page
    page.goto(page_url(app_server, PAGE))
    wait_for_app(page)
    page.wait_for_selector(FIGURE, timeout=180_000)
    assert page.get_by_text("every row sums to one").first.is_visible()
    screenshot(page, "self_attention_toy")
    for tab in ("Several heads", "On a real model"):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(500)
        wait_for_app(page)
        page.get_by_role("tabpanel").locator(FIGURE).first.wait_for(timeout=180_000)
        assert page.locator('[data-testid="stException"]').count() == 0, tab
    page.get_by_text("Recomputed here from the captured q and k").wait_for(timeout=180_000)
    screenshot(page, "self_attention_real")
