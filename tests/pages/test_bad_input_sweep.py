"""Every text box on every page gets the same hostile inputs: no exception, a message, no markup.

The boxes are found in the AppTest element tree, so a new page or box is covered without a new test.
Boxes behind a lazy tab (``st.tabs(..., key=...)``), a radio choice ("Write your own") or a model
picker's "Other" choice are reached by opening each tab and picking each choice in turn.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from txviz import page_map
from txviz.app.ui import OTHER_MODEL

PAGES = sorted(page.file for page in page_map.PAGES)
TIMEOUT_S = 600  # first model loads on a busy machine; later runs reuse Streamlit's caches
HUGE = ("The quick brown fox jumps over the lazy dog. " * 2300)[:100_000]
HOSTILE = {
    "empty": "",
    "huge": HUGE,
    "control": "a\x00b\x01c\x07\x08 \x1b[31mred\x1b[0m\r\n\t\x0b\x0c\x7f \u0085\u200b\u2028\u2029\ufeff end",
    "rtl_emoji": "مرحبا بالعالم שלום \u202eevil\u202c 👩\u200d👩\u200d👧 🏳️\u200d🌈 😀 e\u0301",
    "html": "<img src=x onerror=alert(1)>",
}
MUST_RESPOND = ("empty", "huge")  # these need a visible message or a result, not silence
FIGURES = ("plotly_chart", "arrow_vega_lite_chart", "vega_lite_chart", "imgs", "image")


@dataclass(frozen=True)
class Box:
    """One text box: its widget type and how to find it again (key, else label)."""

    kind: str  # "text_area" or "text_input"
    key: str | None
    label: str

    def find(self, at: AppTest):
        widgets = getattr(at, self.kind)
        if self.key is not None:
            return widgets(key=self.key)
        return next(w for w in widgets if w.label == self.label)


def boxes(at: AppTest) -> list[Box]:
    """Every text area and text input the last run drew."""
    return [Box(kind, w.key, w.label) for kind in ("text_area", "text_input") for w in getattr(at, kind)]


def reveals(at: AppTest) -> list[tuple[str, str]]:
    """(session key, value) pairs that may draw more widgets: lazy tabs, 'Other' models, radios."""
    groups = [[tab.label for tab in node.children.values()] for node in at if node.type == "tab_container"]
    found = []
    for key in at.session_state:
        value = at.session_state[key]
        for labels in groups:  # a keyed st.tabs holds its open tab's label: open every other one
            if isinstance(value, str) and value in labels:
                found += [(key, label) for label in labels if label != value]
    found += [(s.key, OTHER_MODEL) for s in at.selectbox if s.key and OTHER_MODEL in s.options]
    for radio in at.radio:  # each other choice of a keyed radio (labels that are their own values)
        if radio.key and radio.value in radio.options:
            found += [(radio.key, option) for option in radio.options if option != radio.value]
    return found


def responded(at: AppTest) -> bool:
    """A message (error, warning, info) or a result (a figure) is on screen."""
    if any(len(getattr(at, kind)) for kind in ("error", "warning", "info")):
        return True
    return any(at.get(kind) for kind in FIGURES)


def markup_with_user_text(at: AppTest) -> list[str]:
    """Bodies of elements rendered as HTML that carry the hostile markup (must be none)."""
    found = []
    for node in at:
        proto = getattr(node, "proto", None)
        body = getattr(proto, "body", "")
        as_html = node.type == "html" or getattr(proto, "allow_html", False)
        if as_html and isinstance(body, str) and "onerror" in body:
            found.append(body[:200])
    return found


def problems_after(at: AppTest, where: str, case: str) -> list[str]:
    """What went wrong in this run, as readable lines (empty when the page coped)."""
    out = []
    if at.exception:
        out.append(f"{where} {case}: exception {at.exception[0].value}")
    if markup_with_user_text(at):
        out.append(f"{where} {case}: user text rendered as HTML")
    if case in MUST_RESPOND and not responded(at):
        out.append(f"{where} {case}: no message and no result")
    return out


def sweep(at: AppTest, box: Box, where: str) -> list[str]:
    """Every hostile input into one box, then the box's own value back."""
    original = box.find(at).value
    problems = []
    for case, value in HOSTILE.items():
        box.find(at).set_value(value).run()
        problems += problems_after(at, where, case)
    box.find(at).set_value(original).run()
    return problems


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Typed model names must fail fast with a message, never wait on a network."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def page_and_views_source(page: str) -> str:
    """A page script's source and that of the views modules it imports, which draw its tabs."""
    tree = ast.parse((ROOT / page).read_text())
    names = {
        dotted
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
        for dotted in (node.module, f"{node.module}.{alias.name}")
        if "views" in dotted.split(".")
    }
    paths = [ROOT / Path(*name.split(".")) for name in names]
    files = [p.with_suffix(".py") if p.with_suffix(".py").exists() else p / "__init__.py" for p in paths]
    return "\n".join(f.read_text() for f in [ROOT / page, *files] if f.exists())


def sweep_new_boxes(at: AppTest, done: set[Box], where: str) -> list[str]:
    """Sweep each text box the last run drew that no earlier sweep reached."""
    problems = []
    for box in boxes(at):
        if box not in done:
            problems += sweep(at, box, f"{where} [{box.label}]")
            done.add(box)
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_every_text_box_survives_hostile_input(page):
    at = AppTest.from_file(str(ROOT / page), default_timeout=TIMEOUT_S).run()
    assert not at.exception, at.exception
    done: set[Box] = set()
    problems: list[str] = []
    for box in boxes(at):
        problems += sweep(at, box, f"{page} [{box.label}]")
        done.add(box)
    for key, value in reveals(at):
        before = at.session_state[key]
        at.session_state[key] = value
        at.run()
        problems += problems_after(at, f"{page} {key}={value!r}", "revealed")
        problems += sweep_new_boxes(at, done, f"{page} {key}={value!r}")
        # A tab's own model picker (drawn only once its tab is open): its "Other" choice draws a text box.
        for picker in [s.key for s in at.selectbox if s.key and OTHER_MODEL in s.options and s.key != key]:
            chosen = at.session_state[picker]
            if chosen == OTHER_MODEL:
                continue
            at.session_state[picker] = OTHER_MODEL
            at.run()
            problems += sweep_new_boxes(at, done, f"{page} {key}={value!r} {picker}=Other")
            at.session_state[picker] = chosen
            at.run()
        at.session_state[key] = before
        at.run()
    source = page_and_views_source(page)  # the cross-check: a page with a text box had one found
    asks = any(f"{call}(" in source for call in ("text_input", "text_area", "model_picker"))
    assert done or not asks, f"{page} draws a text box, but none was found"
    assert not problems, "\n".join(problems)


def test_the_sweep_finds_boxes_behind_tabs_and_pickers():
    """The discovery itself: the explorer's text and its model picker's typed name are both found."""
    at = AppTest.from_file(str(ROOT / "pages/2_Attention_Explorer.py"), default_timeout=TIMEOUT_S).run()
    assert Box("text_area", "text", "Text") in boxes(at)
    assert ("model", OTHER_MODEL) in reveals(at)
    at.selectbox(key="model").set_value(OTHER_MODEL).run()
    assert Box("text_input", "model_custom", "Hugging Face id or folder") in boxes(at)


BROKEN_PAGE = """
import streamlit as st
text = st.text_area("Notes", "hello", key="notes")
if "\\x00" in text:
    raise RuntimeError("control characters")
st.markdown(text, unsafe_allow_html=True)
"""


def test_the_sweep_catches_a_page_that_breaks():
    """A page that crashes, renders user text as HTML and stays silent on empty text is caught."""
    at = AppTest.from_string(BROKEN_PAGE, default_timeout=60).run()
    problems = sweep(at, Box("text_area", "notes", "Notes"), "broken")
    assert any("control: exception" in p for p in problems), problems
    assert any("html: user text rendered as HTML" in p for p in problems), problems
    assert any("empty: no message and no result" in p for p in problems), problems
    assert any("huge: no message and no result" in p for p in problems), problems
    assert not any("rtl_emoji" in p for p in problems), problems
