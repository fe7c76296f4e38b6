"""The Vision Transformer page in Chromium: it loads, draws its figures and shows no exception."""

from __future__ import annotations

import pytest
from conftest import page_url, screenshot, wait_for_app
from PIL import Image

PAGE = "pages/10_Vision_Transformer.py"


@pytest.mark.browser
def test_browser_upload_shows_the_overlay(app_server, browser_page, tmp_path) -> None:
    path = tmp_path / "upload.png"
    Image.open(vision_sample_path()).save(path)
    browser_page.goto(page_url(app_server, PAGE))
    wait_for_app(browser_page)
    browser_page.get_by_text("Upload", exact=True).click()
    wait_for_app(browser_page)
    browser_page.locator('input[type="file"]').set_input_files(str(path))
    wait_for_app(browser_page)
    overlay = browser_page.locator(".js-plotly-plot").filter(has_text="[CLS] attention, layer 3")
    overlay.first.wait_for(timeout=120_000)
    assert overlay.first.locator(".heatmaplayer, image").count() >= 1
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    assert browser_page.locator('[data-testid="stAlert"]').filter(has_text="Error").count() == 0
    screenshot(browser_page, "vision_upload")


def vision_sample_path():
    from txviz.vision.samples import SAMPLE_FOLDER

    return SAMPLE_FOLDER / "shapes-2.png"
