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


@pytest.mark.browser
def test_a_copied_link_keeps_the_merge_step(app_server, _browser, browser_page) -> None:
    # The slider lives in a fragment: moving it reruns the fragment alone, which writes no link.
    page = browser_page
    page.goto(page_url(app_server, PAGE))
    wait_for_app(page)
    page.wait_for_selector(FIGURE, timeout=180_000)
    thumb = page.locator('[data-testid="stSlider"]').filter(has_text="Merge step").get_by_role("slider")
    thumb.focus()
    for _ in range(4):
        thumb.press("ArrowRight")
    page.wait_for_timeout(500)
    wait_for_app(page)
    assert thumb.input_value() == "4"
    page.get_by_text("Merge 4").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Copy link").click()
    code = page.locator('[data-testid="stPopoverBody"] [data-testid="stCode"]')
    code.wait_for(timeout=30_000)
    link = code.inner_text().strip()
    assert "bpe_step=4" in link, link

    context = _browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        fresh = context.new_page()
        fresh.goto(link)
        wait_for_app(fresh)
        fresh.wait_for_selector(FIGURE, timeout=180_000)
        assert fresh.locator('[data-testid="stException"]').count() == 0
        restored = (
            fresh.locator('[data-testid="stSlider"]').filter(has_text="Merge step").get_by_role("slider")
        )
        assert restored.input_value() == "4"
        assert fresh.get_by_text("Merge 4").first.is_visible()
    finally:
        context.close()
