"""The Attention Explorer in Chromium: type text, see the heatmap, no script runs."""

import pytest
from conftest import screenshot, wait_for_app

pytestmark = pytest.mark.browser


def test_enter_text_and_see_the_heatmap(app_server, browser_page):
    page = browser_page
    page.goto(f"{app_server}/Attention_Explorer")
    wait_for_app(page)
    box = page.get_by_label("Text", exact=True)
    box.fill("The trophy didn't fit in the suitcase because it was too big. <img src=x onerror=alert(1)>")
    box.press("Control+Enter")
    page.wait_for_timeout(500)
    wait_for_app(page)
    heatmap = page.locator('[data-testid="stPlotlyChart"]').first
    heatmap.wait_for(timeout=120_000)
    ticks = page.locator(".xtick text").evaluate_all("els => els.map(e => e.textContent)")
    assert "trophy" in ticks and "suitcase" in ticks
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator("img[src='x']").count() == 0  # the text was never turned into markup
    screenshot(page, "explorer")


def test_projector_mode_labels_every_query_row_of_the_default_sentence(app_server, browser_page):
    """At the projector's 20 px labels the map grows so each of the 16 rows keeps its label, apart."""
    from label_boxes import label_problems

    page = browser_page
    page.goto(f"{app_server}/Attention_Explorer?present=true")
    wait_for_app(page)
    heatmap = page.locator('[data-testid="stPlotlyChart"]').first
    heatmap.locator(".ytick text").first.wait_for(timeout=180_000)
    page.wait_for_timeout(1500)  # plotly lays out labels after the first paint
    rows = heatmap.locator(".ytick text").evaluate_all("els => els.map(e => e.textContent)")
    assert rows[:3] == ["[CLS]", "the", "animal"] and len(rows) == 16, rows
    assert label_problems(page) == []
    screenshot(page, "explorer_projector")
