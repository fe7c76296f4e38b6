"""The Long Documents page in Chromium: a 4,096-token document pasted, the overview drawn, a screenshot."""

import pytest
from conftest import screenshot, wait_for_app

pytestmark = pytest.mark.browser

SENTENCES = (
    "The keeper climbed the tower at dusk and lit the lamp.",
    "Ships passed the reef in the dark and saw the light.",
    "In winter the supply boat came once a month, when the sea allowed.",
    "The children walked to school along the cliff path.",
    "<img src=x onerror=alert(1)> was written on the wall by a visitor.",
)


def long_document(n_words: int = 4000) -> str:
    """Paragraphs of varied sentences, well past 4,096 tokens."""
    words, paragraphs, i = 0, [], 0
    while words < n_words:
        paragraph = " ".join(f"{SENTENCES[(i + j) % len(SENTENCES)]}" for j in range(4))
        paragraphs.append(f"Part {i}. {paragraph}")
        words += len(paragraph.split()) + 2
        i += 1
    return "\n\n".join(paragraphs)


def test_a_4096_token_document_reads_as_an_overview(app_server, browser_page):
    page = browser_page
    page.goto(f"{app_server}/Long_Documents")
    wait_for_app(page, timeout_ms=900_000)
    box = page.get_by_label("Document", exact=True)
    box.fill(long_document())
    box.press("Control+Enter")
    page.wait_for_timeout(1000)
    wait_for_app(page, timeout_ms=1_800_000)
    assert page.get_by_text("only the first 4,096 are shown").count() >= 1
    page.get_by_text("4,096 tokens, 30 layers").wait_for(timeout=60_000)
    charts = page.locator('[data-testid="stPlotlyChart"]')
    assert charts.count() == 4
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator("img[src='x']").count() == 0  # the text was never turned into markup
    screenshot(page, "long_documents")
    charts.nth(1).scroll_into_view_if_needed()  # the app scrolls inside its own container
    page.wait_for_timeout(500)
    page.screenshot(path=str(screenshot(page, "long_documents").with_name("long_documents_overview.png")))
