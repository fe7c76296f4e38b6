"""Defaults that teach, in Chromium: the Explorer's line on what to notice, its glossary on hover, and
Steer waiting for its button."""

from __future__ import annotations

import pytest
from conftest import page_url, screenshot, wait_for_app
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from txviz.app import teaching

pytestmark = pytest.mark.browser


def test_the_notice_defines_head_on_hover(app_server, browser_page):
    page = browser_page
    page.goto(page_url(app_server, "pages/2_Attention_Explorer.py"))
    wait_for_app(page)
    notice = page.locator('[data-testid="stCaptionContainer"]', has_text="What to notice")
    notice.wait_for(timeout=120_000)
    target = notice.locator('[data-testid="stTooltipHoverTarget"]')
    target.scroll_into_view_if_needed()
    tooltip = page.locator('[data-testid="stTooltipContent"]')
    for _ in range(3):  # on a busy machine the first hover can land before the page settles
        page.mouse.move(0, 0)
        target.hover()
        try:
            tooltip.wait_for(timeout=15_000)
            break
        except PlaywrightTimeout:
            continue
    tooltip.wait_for(timeout=15_000)
    assert teaching.GLOSSARY["head"].split(":")[0] in tooltip.inner_text()
    screenshot(page, "explorer_notice_hover")
