"""The Tokenization page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import re

import pytest
from conftest import FIGURE, page_url, screenshot, wait_for_app

PAGE = "pages/4_Tokenization.py"


@pytest.mark.browser
def test_browser_plays_the_rhyme(app_server, browser_page) -> None:
    browser_page.goto(page_url(app_server, PAGE))
    wait_for_app(browser_page)
    browser_page.wait_for_selector(FIGURE, timeout=180_000)
    assert browser_page.get_by_text("Merge step").first.is_visible()
    browser_page.get_by_role("button", name=re.compile("Play")).click()
    browser_page.get_by_text("Merge 3").first.wait_for(timeout=30_000)
    browser_page.get_by_role("button", name=re.compile("Pause")).click()
    wait_for_app(browser_page)
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, "4_Tokenization_playing")
