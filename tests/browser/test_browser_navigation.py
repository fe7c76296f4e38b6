"""Moving around in Chromium: the sidebar, the home cards, shared links and lesson presets."""

import json
import re
import urllib.parse

import pytest
from conftest import page_url, serve_app, wait_for_app
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from txviz import page_map
from txviz.app.lecture.lessons import load_lessons

pytestmark = pytest.mark.browser

PAGE_TITLES = [page.title for page in page_map.PAGES]  # sidebar order


def sidebar_labels(page) -> list[str]:
    """The sidebar menu's entries, in order."""
    links = page.locator('[data-testid="stSidebarNav"] a')
    expect(links).to_have_count(len(PAGE_TITLES) + 1)
    return [text.strip().splitlines()[-1] for text in links.all_inner_texts()]  # after the icon ligature


def wait_for_tick(page, word: str) -> None:
    """Wait until a heatmap's x axis shows the word (the first model load can take a while)."""
    script = "w => [...document.querySelectorAll('.xtick text')].some(e => e.textContent === w)"
    page.wait_for_function(script, arg=word, timeout=120_000)


def test_sidebar_names_home_and_every_page_in_order(app_server, browser_page):
    browser_page.goto(app_server)
    wait_for_app(browser_page)
    assert sidebar_labels(browser_page) == ["Home", *PAGE_TITLES]


def test_a_fresh_servers_first_visit_to_a_page_keeps_what_is_typed(browser_page):
    # A new server's first visit runs the pages/-folder way: the menu and the first input must survive.
    with serve_app("streamlit-fresh.log") as url:
        browser_page.goto(f"{url}/Attention_Explorer")
        wait_for_app(browser_page)
        assert sidebar_labels(browser_page) == ["Home", *PAGE_TITLES]
        box = browser_page.get_by_label("Text", exact=True)
        box.fill("The zebra chased the penguin.")
        box.press("Control+Enter")
        wait_for_tick(browser_page, "zebra")
        assert browser_page.locator('[data-testid="stException"]').count() == 0


def test_a_fresh_servers_first_visit_home_keeps_its_first_click(browser_page):
    with serve_app("streamlit-fresh.log") as url:
        browser_page.goto(url)
        wait_for_app(browser_page)
        toggle = browser_page.get_by_role("switch", name="Presentation mode")
        browser_page.locator('[data-testid="stCheckbox"] label').filter(has_text="Presentation mode").click()
        wait_for_app(browser_page)
        browser_page.wait_for_timeout(500)
        wait_for_app(browser_page)
        expect(toggle).to_be_checked()
        assert sidebar_labels(browser_page) == ["Home", *PAGE_TITLES]


def test_a_home_card_opens_its_page(app_server, browser_page):
    browser_page.goto(app_server)
    wait_for_app(browser_page)
    browser_page.locator('[data-testid="stMainBlockContainer"] [data-testid="stPageLink"] a').filter(
        has_text="Encoder Decoder"
    ).click()
    expect(browser_page).to_have_url(f"{app_server}/Encoder_Decoder", timeout=30_000)
    wait_for_app(browser_page)
    expect(browser_page.locator("h1")).to_have_text("Encoder-decoder and cross-attention", timeout=30_000)


def test_a_shared_link_restores_the_view(app_server, browser_page):
    text = "The keys to the cabinet are on the table."
    query = urllib.parse.urlencode({"model": json.dumps("minilm"), "text": json.dumps(text)})
    browser_page.goto(f"{page_url(app_server, 'pages/2_Attention_Explorer.py')}?{query}")
    wait_for_app(browser_page)
    expect(browser_page.get_by_label("Text", exact=True)).to_have_value(text)
    wait_for_tick(browser_page, "cabinet")


def test_a_lesson_opens_its_page_with_its_talking_points(app_server, browser_page):
    lesson = next(
        lesson for lesson in (lesson.steps[0] for lesson in load_lessons()) if lesson.settings.get("text")
    )
    browser_page.goto(app_server)
    wait_for_app(browser_page)
    box = (
        browser_page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]')
        .filter(has_text="Lesson")
        .locator("input")
    )
    option = browser_page.get_by_role("option", name=lesson.title)
    for attempt in range(4):  # on a busy machine a rerun can close the list as it opens or as it is clicked
        wait_for_app(browser_page)
        box.click()
        try:
            option.wait_for(timeout=10_000)
            option.click(timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 3:
                raise
    expect(browser_page).to_have_url(re.compile(re.escape(page_url(app_server, lesson.page))), timeout=60_000)
    wait_for_app(browser_page)
    expect(browser_page.get_by_label("Text", exact=True)).to_have_value(lesson.settings["text"])
    expect(browser_page.locator('[data-testid="stSidebar"]')).to_contain_text(lesson.points[0][:40])
    assert browser_page.locator('[data-testid="stException"]').count() == 0
