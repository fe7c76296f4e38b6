"""Every page opened in a real browser: it renders a figure and no exception box."""

from pathlib import Path

import pytest
from conftest import FIGURE, page_url, screenshot, wait_for_app
from label_boxes import DRAWN, label_problems
from playwright.sync_api import expect

from txviz import page_map

PAGES = [page.file for page in page_map.PAGES]

pytestmark = pytest.mark.browser


def test_home_page_links_every_page(app_server, browser_page):
    browser_page.set_viewport_size({"width": 1280, "height": 720})  # a projector's or small laptop's screen
    browser_page.goto(app_server)
    wait_for_app(browser_page)
    cards = browser_page.locator('.st-key-pages [data-testid="stPageLink"]')
    expect(cards).to_have_count(len(PAGES), timeout=60_000)
    expect(browser_page.locator('.st-key-start-here [data-testid="stPageLink"]').first).to_be_visible()
    expect(browser_page.locator('[data-testid="stDataFrame"]')).to_be_visible()  # the model table
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, "home")


@pytest.mark.parametrize("script", PAGES)
def test_page_shows_a_figure(app_server, browser_page, script):
    browser_page.goto(page_url(app_server, script))
    wait_for_app(browser_page)
    browser_page.wait_for_selector(FIGURE, timeout=180_000)
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, Path(script).stem)
    if browser_page.locator(DRAWN).count():  # the labels of the charts drawn by now stay apart
        browser_page.wait_for_timeout(1000)
        assert not (problems := label_problems(browser_page)), "\n".join(problems)
