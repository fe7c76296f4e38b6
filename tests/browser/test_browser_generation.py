"""The Live Generation page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import threading

import pytest
from conftest import CHROMIUM, CHROMIUM_FLAGS, page_url, screenshot, wait_for_app

PAGE = "pages/8_Live_Generation.py"


def _start_in_browser(page, base: str, prompt: str, n: int) -> None:
    page.goto(page_url(base, PAGE))
    wait_for_app(page)
    box = page.get_by_label("Prompt")
    box.fill(prompt)
    box.press("Control+Enter")  # commit the text area
    tokens = page.get_by_role("spinbutton", name="Max new tokens")
    tokens.fill(str(n))
    tokens.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Generate").click()


def _generate_in_browser(page, base: str, prompt: str, n: int) -> None:
    _start_in_browser(page, base, prompt, n)
    page.wait_for_selector("text=Replay a step", timeout=240_000)
    wait_for_app(page)


def _metric(page, label: str) -> str:
    return (
        page.locator('[data-testid="stMetric"]', has_text=label)
        .locator('[data-testid="stMetricValue"]')
        .inner_text()
    )


@pytest.mark.browser
def test_browser_sees_tokens_appear(app_server, browser_page):
    _generate_in_browser(browser_page, app_server, "The capital of France is", 4)
    assert _metric(browser_page, "Tokens made") == "4"
    code = browser_page.locator('[data-testid="stCode"]').first.inner_text()
    assert "The capital of France is" in code
    assert not code.rstrip().endswith("The capital of France is")  # new text follows the prompt
    assert browser_page.locator('[data-testid="stPlotlyChart"]').count() >= 2
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    screenshot(browser_page, "live_generation")


@pytest.mark.browser
def test_stop_keeps_the_tokens_made_so_far(app_server, browser_page):
    page = browser_page
    _start_in_browser(page, app_server, "Write a long story about a lighthouse.", 200)
    page.wait_for_selector('[data-testid="stMetric"]', timeout=240_000)  # the first token is out
    page.get_by_role("button", name="Stop").click()
    page.wait_for_selector("text=Replay a step", timeout=120_000)
    wait_for_app(page)
    made = int(_metric(page, "Tokens made"))
    assert 1 <= made < 200
    assert page.get_by_text("stopped.", exact=False).count() >= 1
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.mark.browser
def test_two_browser_sessions_keep_their_own_tokens(app_server):
    prompts = {"a": "My favourite fruit is", "b": "The largest planet in the solar system is"}
    texts: dict[str, str] = {}
    failures: list[BaseException] = []

    def session(key: str) -> None:
        # Playwright's sync API is bound to its thread: each session gets its own.
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                _generate_in_browser(page, app_server, prompts[key], 4)
                texts[key] = page.locator('[data-testid="stCode"]').first.inner_text()
                browser.close()
        except BaseException as error:  # reported in the main thread below
            failures.append(error)

    threads = [threading.Thread(target=session, args=(k,)) for k in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert prompts["a"] in texts["a"] and prompts["b"] not in texts["a"]
    assert prompts["b"] in texts["b"] and prompts["a"] not in texts["b"]
