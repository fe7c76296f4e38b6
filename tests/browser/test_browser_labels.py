"""Labels in Chromium: on the views that overlapped no two tick labels of an axis overlap, none is
clipped, and no title sits on a plot area or on another title (boxes measured in the page).
tests/browser/test_browser_pages.py runs the same measure on every page's first view."""

from __future__ import annotations

import re
from pathlib import Path

import plotly.graph_objects as go
import pytest
from conftest import ARTIFACTS, FIGURE, page_url, screenshot, wait_for_app
from label_boxes import DRAWN, label_problems
from plotly.subplots import make_subplots

pytestmark = pytest.mark.browser

# The views whose labels overlapped or vanished, as (page script, tab to open or None for the first).
VIEWS = [
    ("pages/7_Soft_vs_Hard.py", None),
    ("pages/8_Live_Generation.py", None),  # before Generate: the newest token's all-heads map
    ("pages/19_Long_Documents.py", None),
    ("pages/16_Head_Detectors.py", None),
    ("pages/14_Why_Attention.py", None),
    ("pages/4_Tokenization.py", None),
]


def open_view(page, base: str, script: str, tab: str | None, link: str = "") -> None:
    """Load a page (``link``: its settings, e.g. "?layer=3"), open a tab by its name, and wait until
    its figures are drawn."""
    page.goto(page_url(base, script) + link)
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


def measured(page, name: str) -> list[str]:
    """The label problems of the view on screen, its screenshots saved under ``name``."""
    problems = label_problems(page)
    screenshot(page, name)
    shoot_charts(page, name)
    assert page.locator('[data-testid="stException"]').count() == 0
    return problems


@pytest.mark.parametrize(("script", "tab"), VIEWS, ids=[f"{Path(s).stem}-{t or 'default'}" for s, t in VIEWS])
def test_labels_apart_on_fixed_views(app_server, browser_page, script, tab):
    open_view(browser_page, app_server, script, tab)
    problems = measured(browser_page, f"labels_{Path(script).stem}_{(tab or 'default').replace(' ', '_')}")
    assert not problems, "\n".join(problems)


def test_explorer_strip_of_one_layer_names_that_layer(app_server, browser_page):
    open_view(browser_page, app_server, "pages/2_Attention_Explorer.py", "All heads", "?layer=3")
    problems = measured(browser_page, "labels_2_Attention_Explorer_All_heads")
    strip = browser_page.locator('[data-testid="stPlotlyChart"]').first
    texts = "els => els.map((e) => e.textContent)"  # SVG text has no innerText
    assert strip.locator(".ytick text").evaluate_all(texts) == ["3"]  # not the row's index, 0
    assert strip.locator(".g-ytitle text").evaluate_all(texts) == ["layer"]
    assert not problems, "\n".join(problems)


def _shown(page, figure: go.Figure) -> list[str]:
    """The measure's problems for one plotly figure drawn alone, as Streamlit wraps it."""
    div = figure.to_html(include_plotlyjs=True, full_html=False)
    page.set_content(f'<div data-testid="stPlotlyChart">{div}</div>')
    page.wait_for_selector(".js-plotly-plot .main-svg")
    return label_problems(page)


def test_the_measure_sees_overlapping_clipped_and_misplaced_labels(browser_page):
    words = [f"token number {i}" for i in range(30)]
    crowded = go.Figure(go.Heatmap(z=[list(range(30))], x=list(range(30))))
    crowded.update_layout(width=500, height=300)
    crowded.update_xaxes(tickmode="array", tickvals=list(range(30)), ticktext=words, tickangle=0)
    assert any("tick labels" in p and "overlap" in p for p in _shown(browser_page, crowded))

    bars = go.Figure(go.Bar(x=["a", "b"], y=[1.0, 0.5], text=["1.000", "0.500"], textposition="outside"))
    bars.update_layout(width=500, height=300, yaxis_range=[0, 1.0])
    assert any("bar label clipped" in p for p in _shown(browser_page, bars))

    grid = make_subplots(rows=2, cols=1, subplot_titles=("top", "bottom"), vertical_spacing=0.0)
    grid.add_trace(go.Heatmap(z=[[1, 2]]), row=1, col=1).add_trace(go.Heatmap(z=[[1, 2]]), row=2, col=1)
    grid.update_layout(width=500, height=400)
    assert any("title over a plot area" in p for p in _shown(browser_page, grid))


def test_the_measure_passes_labels_that_fit(browser_page):
    figure = go.Figure(go.Heatmap(z=[[1, 2, 3]], x=[0, 1, 2]))
    figure.update_layout(width=500, height=300, title="apart")
    figure.update_xaxes(tickmode="array", tickvals=[0, 1, 2], ticktext=["a", "b", "c"])
    assert _shown(browser_page, figure) == []
