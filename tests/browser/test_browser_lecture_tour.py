"""The guided tour in Chromium: start a lecture, answer its first question, go on, and reload."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from conftest import page_url, screenshot, wait_for_app
from playwright.sync_api import expect

from txviz.lecture.files import shipped_lectures

pytestmark = pytest.mark.browser


def test_a_tour_follows_its_steps_and_survives_a_reload(app_server, browser_page):
    page = browser_page
    lecture = shipped_lectures()["2_from_rnns_to_transformers"]
    first, second = lecture.steps[:2]
    n = len(lecture.steps)
    page.goto(page_url(app_server, "pages/20_Lectures.py") + "?lecture=" + quote(json.dumps(lecture.name)))
    wait_for_app(page)
    page.locator(".st-key-start_tour button").click()
    page.wait_for_url(f"**/{first.page}?**tour_step=1**", timeout=120_000)  # a page's map name is its URL
    wait_for_app(page)
    bar = page.locator(".st-key-tour-bar")
    expect(bar).to_contain_text(f"step 1 of {n}", timeout=60_000)
    expect(bar).to_contain_text(first.title)

    right = first.question.options[first.question.answer]
    bar.get_by_text(right, exact=True).click()
    bar.get_by_role("button", name="Lock in my answer").click()
    expect(bar).to_contain_text(f"Right. The answer: {right}", timeout=60_000)
    screenshot(page, "lecture_tour_reveal")

    page.locator(".st-key-_tour_next button").click()
    page.wait_for_url("**tour_step=2**", timeout=120_000)
    wait_for_app(page)
    expect(bar).to_contain_text(f"step 2 of {n}", timeout=60_000)
    expect(bar).to_contain_text(second.title)
    page.reload()
    wait_for_app(page)
    expect(page.locator(".st-key-tour-bar")).to_contain_text(f"step 2 of {n}", timeout=60_000)
    assert page.locator('[data-testid="stException"]').count() == 0
