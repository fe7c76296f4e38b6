"""Labels in Chromium: on the default views no two tick labels of an axis overlap, none is clipped by
its chart, and no title sits on a plot area or on another title (boxes measured in the page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ARTIFACTS, FIGURE, ROOT, page_url, screenshot, wait_for_app
from label_boxes import label_problems

pytestmark = pytest.mark.browser

# The views whose labels overlapped or vanished, as (page script, tab to open or None for the first).
VIEWS = [
    ("pages/7_Soft_vs_Hard.py", None),
    ("pages/8_Live_Generation.py", None),  # before Generate: the newest token's all-heads map
    ("pages/19_Long_Documents.py", None),
    ("pages/16_Head_Detectors.py", None),
    ("pages/2_Attention_Explorer.py", "All heads"),
    ("pages/14_Why_Attention.py", None),
    ("pages/4_Tokenization.py", None),
]
PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py"))
DRAWN = ".js-plotly-plot .main-svg, [data-testid='stVegaLiteChart'] svg"


def open_view(page, base: str, script: str, tab: str | None) -> None:
    """Load a page, open a tab by its name, and wait until its figures are drawn."""
    page.goto(page_url(base, script))
    wait_for_app(page)
    if tab:
        page.get_by_role("tab", name=re.compile(f"^{re.escape(tab)}$")).click()
        page.wait_for_timeout(500)
        wait_for_app(page)
    page.wait_for_selector(FIGURE, timeout=180_000)
    page.wait_for_selector(DRAWN, timeout=60_000)
    page.wait_for_timeout(1500)  # plotly lays out labels after the first paint


def shoot_charts(page, name: str) -> None:
    """A screenshot of each chart drawn (the page's own scrolls, so a page screenshot misses most)."""
    charts = page.locator('[data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"]')
    for i in range(charts.count()):
        if charts.nth(i).is_visible():
            charts.nth(i).screenshot(path=str(ARTIFACTS / f"{name}_chart{i + 1}.png"))


@pytest.mark.parametrize(("script", "tab"), VIEWS, ids=[f"{Path(s).stem}-{t or 'default'}" for s, t in VIEWS])
def test_labels_apart_on_fixed_views(app_server, browser_page, script, tab):
    open_view(browser_page, app_server, script, tab)
    problems = label_problems(browser_page)
    name = f"labels_{Path(script).stem}_{(tab or 'default').replace(' ', '_')}"
    screenshot(browser_page, name)
    shoot_charts(browser_page, name)
    assert browser_page.locator('[data-testid="stException"]').count() == 0
    assert not problems, "\n".join(problems)
