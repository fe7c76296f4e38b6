"""'Why this token?' in Chromium: the step-score strip, the inspector of a step, the source attribution."""

from __future__ import annotations

import pytest
from conftest import FIGURE, page_url, screenshot, wait_for_app
from test_browser_generation import _generate_in_browser

GENERATION = "pages/8_Live_Generation.py"
ENCODER_DECODER = "pages/9_Encoder_Decoder.py"


@pytest.mark.browser
def test_browser_explains_a_generated_token(app_server, browser_page):
    page = browser_page
    _generate_in_browser(page, app_server, "The capital of France is", 3)
    page.wait_for_selector("text=How sure the model was at every step", timeout=60_000)
    page.get_by_text("Explain this step").click()
    page.wait_for_selector("text=Logit lens", timeout=240_000)
    wait_for_app(page)
    assert page.get_by_text("Do they rank the tokens alike?").count() >= 1
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "live_generation_explain")


@pytest.mark.browser
def test_browser_attributes_a_decoding_step_to_the_source(app_server, browser_page):
    page = browser_page
    page.goto(page_url(app_server, ENCODER_DECODER))
    wait_for_app(page)
    page.wait_for_selector(FIGURE, timeout=180_000)
    page.get_by_text("Why this token? Attribution to the source").click()
    page.wait_for_selector("text=cross-attention, last layer mean", timeout=120_000)
    wait_for_app(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "encoder_decoder_explain")
