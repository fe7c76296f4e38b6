"""Image GPT in Chromium: live drawing fills the image and ends on every head's attention."""

import pytest
from conftest import page_url, screenshot, wait_for_app

PAGE = "pages/12_Image_GPT.py"


@pytest.mark.browser
def test_browser_live_drawing_fills_the_image(app_server, browser_page) -> None:
    browser_page.goto(page_url(app_server, PAGE))
    wait_for_app(browser_page)
    browser_page.get_by_text("Draw live, pixel by pixel").click()
    browser_page.locator(".js-plotly-plot").filter(has_text="Drawing pixel").first.wait_for(timeout=120_000)
    wait_for_app(browser_page)
    heads = browser_page.locator(".js-plotly-plot").filter(
        has_text="Where each head looks while drawing pixel 36"
    )
    heads.first.wait_for(timeout=120_000)
    assert heads.first.locator(".heatmaplayer, image").count() >= 1
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    heads.first.scroll_into_view_if_needed()
    screenshot(browser_page, "imagegpt_live")
