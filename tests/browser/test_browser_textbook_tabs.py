"""The textbook tabs in a real browser: each draws its figure with no exception box."""

from __future__ import annotations

import pytest
from conftest import ARTIFACTS, FIGURE, page_url, screenshot, wait_for_app

pytestmark = pytest.mark.browser

TABS = [
    ("pages/1_Self_Attention.py", "Shuffle the tokens"),
    ("pages/1_Self_Attention.py", "Additive (Bahdanau)"),
    ("pages/1_Self_Attention.py", "Linear attention"),
    ("pages/1_Self_Attention.py", "Several heads"),
    ("pages/3_Positional_Encoding.py", "Learned (MiniLM)"),
    ("pages/3_Positional_Encoding.py", "X + P"),
    ("pages/3_Positional_Encoding.py", "Relative (Shaw)"),
    ("pages/5_Masking_Patterns.py", "Images (Swin)"),
    ("pages/5_Masking_Patterns.py", "GPT vs BERT objectives"),
    ("pages/9_Encoder_Decoder.py", "Cross-attention arithmetic"),
    ("pages/9_Encoder_Decoder.py", "Teacher forcing"),
    ("pages/9_Encoder_Decoder.py", "All positions at once"),
    ("pages/5_Masking_Patterns.py", "Using the encoder"),
    ("pages/11_Transformer_Block.py", "Mixture of experts"),
    ("pages/3_Positional_Encoding.py", "Add = concatenate"),
    ("pages/1_Self_Attention.py", "As one matrix (Fig. 12.2)"),
    ("pages/14_Why_Attention.py", "Attention = convolution"),
    ("pages/14_Why_Attention.py", "Nested phrases"),
    ("pages/11_Transformer_Block.py", "Conformer"),
    ("pages/10_Vision_Transformer.py", "ViT-Base as the books draw it"),
]


@pytest.mark.parametrize(("script", "tab"), TABS, ids=[f"{s.split('/')[1][:-3]}-{t}" for s, t in TABS])
def test_tab_draws_its_figure(app_server, browser_page, script, tab):
    page = browser_page
    page.goto(page_url(app_server, script))
    wait_for_app(page)
    page.get_by_role("tab", name=tab).click()
    page.wait_for_timeout(500)
    wait_for_app(page)
    panel = page.get_by_role("tabpanel")
    panel.locator(FIGURE).first.wait_for(timeout=180_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    name = script.split("/")[1][:-3] + "_" + "".join(c if c.isalnum() else "_" for c in tab)
    screenshot(page, name)
    last = panel.locator(FIGURE).filter(visible=True).last  # the lowest figure shown, below the first screen
    last.scroll_into_view_if_needed()
    last.screenshot(path=str(ARTIFACTS / f"{name}_last.png"))
