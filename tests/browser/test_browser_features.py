"""The Features page and Why Attend's feature mode in Chromium: SmolLM2's quick dictionary trained (or
opened) on the page, a feature's contexts drawn, a click on the map opening a feature, and Why Attend
splitting a score into that dictionary's features with a link to a feature's page."""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIGURE, screenshot, wait_for_app
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
STREAM = "decoder.15.resid_pre"  # the page's default place on SmolLM2: the middle block's input


def link(base: str, page: str, **settings) -> str:
    query = "&".join(f"{k}={json.dumps(v)}" for k, v in settings.items())
    return f"{base}/{page}?{query}"


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0


def test_a_feature_page_draws_its_contexts_and_the_map_opens_another(app_server, browser_page):
    page = browser_page
    page.goto(link(app_server, "Features", model="smollm2", place=STREAM))
    wait_for_app(page, 600_000)  # the first visit trains the quick dictionary (16,384 tokens)
    page.wait_for_selector(FIGURE, timeout=600_000)
    no_exception(page)
    expect(page.get_by_text(re.compile(r"feature \d+'s top contexts"))).to_be_visible()
    page.get_by_role("tab", name="Feature map", exact=True).click()
    wait_for_app(page)
    expect(page.get_by_text("every feature of the dictionary")).to_be_visible(timeout=60_000)
    no_exception(page)
    page.get_by_role("tab", name="Feature", exact=True).click()
    wait_for_app(page)
    no_exception(page)


def test_why_attend_splits_a_score_into_the_features_and_links_them(app_server, browser_page):
    page = browser_page
    page.goto(link(app_server, "Features", model="smollm2", place=STREAM))  # the dictionary, made or opened
    wait_for_app(page, 600_000)
    page.goto(link(app_server, "Why_Attend", model="smollm2", why_layer=15, why_head=3, why_features=True))
    wait_for_app(page, 300_000)
    expect(page.get_by_text("The largest feature pairs")).to_be_visible(timeout=60_000)
    expect(page.get_by_text(re.compile(r"Check: the [\d,]+ pairs sum to"))).to_be_visible()
    no_exception(page)
    screenshot(page, "why-attend-features")
    first = page.locator('[data-testid="stPageLink"]').filter(has_text=re.compile(r"Feature \d+$")).first
    expect(first).to_be_visible()
    number = int(re.search(r"Feature (\d+)$", first.inner_text().strip()).group(1))
    first.click()
    wait_for_app(page, 300_000)
    assert page.locator('[data-testid="stNumberInput"] input').first.input_value() == str(number)
    page.wait_for_selector(FIGURE, timeout=120_000)
    no_exception(page)
