"""Projector mode in Chromium at 1280 x 720: the sidebar folded away, the first figure above the fold,
measured figure fonts, and the mode kept while the lecturer moves on; the sidebar's controls on a laptop."""

import re

import pytest
from conftest import ARTIFACTS, FIGURE, wait_for_app
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SIDEBAR_WIDTH = "() => document.querySelector('[data-testid=\"stSidebar\"]').getBoundingClientRect().right"
# Font sizes in px: every plotly tick label, every chart title (plotly and vega), the body text.
FONTS = """() => {
  const px = e => parseFloat(getComputedStyle(e).fontSize);
  const charts = '[data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"]';
  const ticks = [...document.querySelectorAll('[data-testid="stPlotlyChart"] :is(.xtick, .ytick) text')];
  const titles = [...document.querySelectorAll('[data-testid="stPlotlyChart"] .gtitle')];
  const body = [...document.querySelectorAll('[data-testid="stMainBlockContainer"] p')]
    .filter(p => !p.closest(charts) && !p.closest('[data-testid="stCaptionContainer"]'));
  return {ticks: ticks.map(px), titles: titles.map(px), body: Math.max(...body.map(px))};
}"""


def settle(page) -> None:
    """Wait for the run a click started to finish."""
    page.wait_for_timeout(500)
    wait_for_app(page)


def test_projector_mode_at_1280x720_stays_on_from_page_to_page(app_server, browser_page):
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(app_server)
    wait_for_app(page)
    page.locator('[data-testid="stCheckbox"] label').filter(has_text="Presentation mode").click()
    settle(page)
    expect(page.get_by_role("button", name="Leave projector")).to_be_visible(timeout=30_000)
    page.wait_for_function(f"() => ({SIDEBAR_WIDTH})() <= 0", timeout=10_000)  # folded away

    # The path's second step: the Explorer, in projector mode by the session and by its link.
    page.locator(".st-key-start-here a").filter(has_text="Token focus").click()
    expect(page).to_have_url(re.compile(r"/Attention_Explorer\?.*present=true"), timeout=60_000)
    assert "view=%22Token+focus%22" in page.url
    wait_for_app(page)
    page.wait_for_selector('[data-testid="stPlotlyChart"] .xtick text', timeout=180_000)
    page.wait_for_timeout(1_000)  # plotly lays out its ticks after the element appears
    expect(page.get_by_role("button", name="Leave projector")).to_be_visible()
    assert page.evaluate(SIDEBAR_WIDTH) <= 0
    assert page.locator(FIGURE).first.bounding_box()["y"] < 720 - 150  # the room sees the first figure
    fonts = page.evaluate(FONTS)
    assert fonts["ticks"] and min(fonts["ticks"]) >= 18, fonts
    assert fonts["titles"] and min(fonts["titles"]) >= fonts["body"], fonts  # titles not below body text
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "projector.png"))  # the viewport: what the room sees

    page.get_by_role("link", name="Next: Positions").click()
    expect(page).to_have_url(re.compile(r"/Positional_Encoding\?.*present=true"), timeout=60_000)
    wait_for_app(page)
    expect(page.get_by_role("button", name="Leave projector")).to_be_visible()
    assert page.evaluate(SIDEBAR_WIDTH) <= 0

    page.get_by_role("button", name="Leave projector").click()
    settle(page)
    page.wait_for_function(f"() => ({SIDEBAR_WIDTH})() > 200", timeout=10_000)  # the sidebar is back
    expect(page.get_by_role("switch", name="Presentation mode")).not_to_be_checked()
    expect(page).not_to_have_url(re.compile("present="))


def test_lesson_presentation_and_advanced_controls_show_on_a_laptop_screen(app_server, browser_page):
    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(app_server)
    wait_for_app(page)
    sidebar = page.locator('[data-testid="stSidebar"]')
    for control in (
        sidebar.locator('[data-testid="stCheckbox"]').filter(has_text="Presentation mode"),
        sidebar.locator('[data-testid="stSelectbox"]').filter(has_text="Lesson"),
        sidebar.locator('[data-testid="stExpander"]').filter(has_text="Advanced"),
    ):
        expect(control).to_be_in_viewport(ratio=1)  # below the page menu, which scrolls in its own box
    expect(sidebar.get_by_text("Device", exact=True)).not_to_be_visible()  # folded under Advanced
