"""The Encoder-Decoder page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import pytest
from conftest import FIGURE, page_url, screenshot, wait_for_app

PAGE = "pages/9_Encoder_Decoder.py"


@pytest.mark.browser
def test_browser_shows_the_alignment(app_server, browser_page):
    browser_page.goto(page_url(app_server, PAGE))
    wait_for_app(browser_page)
    browser_page.wait_for_selector(FIGURE, timeout=180_000)
    assert browser_page.get_by_text("2026-11-22").first.is_visible()
    assert browser_page.get_by_text("cross-attention (target → source)").count() >= 1
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, "encoder_decoder")
