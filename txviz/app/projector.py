"""Projector (presentation) mode: whether it is on, the link parameter that carries it, every figure's
fonts scaled by one factor, and the stage: the slot under the title where the page's first figure is drawn,
above the controls, so the room sees it at 1280 x 720."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from txviz.figures.axes import PROJECTOR_SCALE

KEY = "presentation"  # the sidebar toggle's key
ON = "_presentation_on"  # the session's choice, a plain session value: it outlives page switches
PARAM = "present"  # the link parameter that opens a page in projector mode: present=true
STAGE = "_projector_stage"  # this run's stage: {"slot": a container, "filled": whether a figure took it}
FONT_SCALE = PROJECTOR_SCALE  # every figure font: Streamlit's 12 px tick labels become 20 px
PRESENTATION_CSS = """<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 20px; }
h1 { font-size: 2.2rem !important; padding: 0 !important; }
[data-testid="stMarkdownContainer"] p, label { font-size: 1rem !important; }
[data-testid="stCaptionContainer"] { font-size: 0.85rem !important; }
[data-testid="stHeader"], [data-testid="stHeader"] * { background: transparent; pointer-events: none; }
[data-testid="stHeader"] button { pointer-events: auto; }
[data-testid="stMainBlockContainer"] { padding-top: 1.2rem !important; padding-bottom: 2rem !important; }
[data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.5rem; }
[data-testid="stTextArea"] textarea { height: 3.6em !important; min-height: 0 !important; }
</style>"""  # figures' fonts grow in draw by one factor, so chart titles stay above body text
# In projector mode: no header bar over the title (its sidebar arrow stays) and two-line text boxes, so the first figure starts above the fold at 1280 x 720.
SIDEBAR_CSS = """<style>
[data-testid="stSidebarNavItems"] { max-height: 42vh; overflow-y: auto; }
</style>"""  # the page menu scrolls in its own box, so the controls under it show on a laptop screen
# Sizes Streamlit's own chart themes give when a figure sets none (its plotly template, its vega config).
PLOTLY_SIZES = {"font": 12, "title": 16, "tick": 12, "axis_title": 14, "legend": 12}
VEGA_SIZES = {
    ("axis", "labelFontSize"): 12,
    ("axis", "titleFontSize"): 14,
    ("legend", "labelFontSize"): 14,
    ("legend", "titleFontSize"): 14,
    ("title", "fontSize"): 16,
    ("header", "labelFontSize"): 14,
    ("header", "titleFontSize"): 14,
    ("text", "fontSize"): 12,
}
VEGA_FONT_KEYS = {"fontSize", "labelFontSize", "titleFontSize", "subtitleFontSize"}


def presenting() -> bool:
    """Projector mode is on in this session (or, in a page drawn without setup_page, its toggle is)."""
    return bool(st.session_state.get(ON, st.session_state.get(KEY)))


def restore() -> None:
    """Give the toggle the session's choice before it is drawn; a present=true link opens a new session
    in projector mode (a choice made in the session wins)."""
    # Streamlit drops a widget's value when the page changes; the plain session value does not.
    if ON not in st.session_state and st.query_params.get(PARAM) == "true":
        st.session_state[ON] = True
    st.session_state[KEY] = bool(st.session_state.get(ON, st.session_state.get(KEY)))


def choose(on: bool | None = None) -> None:
    """A callback: keep the toggle's new value (or ``on``) as the session's choice."""
    st.session_state[ON] = st.session_state[KEY] = bool(st.session_state[KEY] if on is None else on)


def keep_in_link() -> None:
    """While on, the address bar carries present=true, so a copied link opens on the projector too."""
    if presenting():
        if st.query_params.get(PARAM) != "true":
            st.query_params[PARAM] = "true"
    elif PARAM in st.query_params:
        del st.query_params[PARAM]


def link_params() -> dict[str, str]:
    """The parameter a link inside the app adds so the next page opens in the same mode."""
    return {PARAM: "true"} if presenting() else {}


def open_stage() -> None:
    """In projector mode, an empty slot here that the page's next figure fills, with its export menu and
    its teaching notice: whatever the page draws after this call (its controls) sits below that figure.

    ``setup_page`` opens one under the title on every run; a page may open it again lower down (under
    its tabs) or inside a fragment, whose reruns cannot write to a slot of the whole page's run."""
    if presenting():
        st.session_state[STAGE] = {"slot": st.container(), "filled": False}
    else:
        st.session_state.pop(STAGE, None)


def close_stage() -> None:
    """No stage on this run: a page whose first figure already sits beside its controls, in view at
    1280 x 720, keeps its own layout."""
    st.session_state.pop(STAGE, None)


@contextmanager
def on_stage(take: bool = True) -> Iterator[None]:
    """Draw the block in the stage when it is open and still empty (the page's first figure, or a row of
    figures drawn as one); elsewhere, or with ``take=False``, where the page is drawing."""
    stage = st.session_state.get(STAGE)
    if not (take and stage and not stage["filled"]):
        if stage and stage["filled"] and not stage.get("drawing"):
            stage["noticed"] = True  # another figure came after it: the next notice is that figure's
        yield
        return
    stage["filled"] = stage["drawing"] = True
    try:
        with stage["slot"]:
            yield
    finally:
        stage["drawing"] = False


def staged_slot() -> Any:
    """The stage's slot when a figure fills it and none was drawn since (the notice under that figure
    goes there), else None."""
    stage = st.session_state.get(STAGE)
    if stage and stage["filled"] and not stage.get("noticed"):
        stage["noticed"] = True
        return stage["slot"]
    return None


def scaled(figure: Any, factor: float = FONT_SCALE) -> Any:
    """A copy of a plotly figure (a go.Figure) or an altair chart (a vega-lite dict) with every font
    ``factor`` times larger; the figure given is left as it is (it may be cached for every session)."""
    if hasattr(figure, "to_plotly_json"):
        return scaled_plotly(figure, factor)
    return scaled_vega(figure.to_dict(), factor)


def _times(size: Any, factor: float) -> Any:
    """A font size (or a list of them, one per point) times the factor."""
    if isinstance(size, (int, float)) and not isinstance(size, bool):
        return round(size * factor, 1)
    if isinstance(size, (list, tuple)):
        return [_times(s, factor) for s in size]
    return size


def _scale_fonts(node: Any, factor: float) -> None:
    """Every explicit size under a plotly key ending in 'font' (font, tickfont, textfont...), in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key.endswith("font") and isinstance(value, dict) and "size" in value:
                value["size"] = _times(value["size"], factor)
            _scale_fonts(value, factor)
    elif isinstance(node, list):
        for item in node:
            _scale_fonts(item, factor)


def _font(parent: dict, key: str, default: float, factor: float) -> None:
    """Give ``parent[key]`` (a font) the default size times the factor when the figure set none."""
    font = parent.setdefault(key, {})
    if font.get("size") is None:
        font["size"] = round(default * factor, 1)


def _colorbar(colorbar: dict, factor: float) -> None:
    _font(colorbar, "tickfont", PLOTLY_SIZES["tick"], factor)
    _font(colorbar.setdefault("title", {}), "font", PLOTLY_SIZES["axis_title"], factor)


def scaled_plotly(figure, factor: float = FONT_SCALE) -> go.Figure:
    """A copy of the figure with every font scaled, the sizes Streamlit's template would set included."""
    spec = copy.deepcopy(figure.to_plotly_json())
    _scale_fonts(spec, factor)
    layout = spec.setdefault("layout", {})
    _font(layout, "font", PLOTLY_SIZES["font"], factor)
    title = layout.setdefault("title", {})
    _font(title, "font", PLOTLY_SIZES["title"], factor)
    legend = layout.setdefault("legend", {})
    _font(legend, "font", PLOTLY_SIZES["legend"], factor)
    _font(legend.setdefault("title", {}), "font", PLOTLY_SIZES["legend"], factor)
    # Streamlit's template sizes every axis's ticks and title: the layout font alone would not reach them.
    axes = [name for name in layout if name.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]
    for name in axes:
        axis = layout.setdefault(name, {})
        _font(axis, "tickfont", PLOTLY_SIZES["tick"], factor)
        _font(axis.setdefault("title", {}), "font", PLOTLY_SIZES["axis_title"], factor)
    for name in [name for name in layout if name.startswith("coloraxis")] or ["coloraxis"]:
        _colorbar(layout.setdefault(name, {}).setdefault("colorbar", {}), factor)
    for trace in spec.get("data", []):
        if "colorbar" in trace or trace.get("type") in ("heatmap", "contour", "histogram2d"):
            _colorbar(trace.setdefault("colorbar", {}), factor)
    return go.Figure(spec)


def scaled_vega(spec: dict, factor: float = FONT_SCALE) -> dict:
    """A vega-lite spec with every explicit font size scaled and Streamlit's default sizes, scaled, in
    its config (the chart's own settings win over Streamlit's theme)."""
    spec = copy.deepcopy(spec)
    _scale_vega(spec, factor)
    config = spec.setdefault("config", {})
    for (part, key), default in VEGA_SIZES.items():
        config.setdefault(part, {}).setdefault(key, round(default * factor, 1))
    return spec


def _scale_vega(node: Any, factor: float) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in VEGA_FONT_KEYS:
                node[key] = _times(value, factor)
            elif key not in ("datasets", "data"):  # the numbers drawn are not font sizes
                _scale_vega(value, factor)
    elif isinstance(node, list):
        for item in node:
            _scale_vega(item, factor)


def draw(figure: Any, key: str, **options: Any) -> None:
    """Draw a plotly figure or an altair chart at the page's width, its fonts scaled in projector mode."""
    if hasattr(figure, "to_plotly_json"):
        shown = scaled_plotly(figure) if presenting() else figure
        st.plotly_chart(shown, width="stretch", key=key, config={"displaylogo": False}, **options)
    elif presenting():  # as a vega-lite spec: its config, scaled, replaces Streamlit's theme sizes
        st.vega_lite_chart(spec=scaled(figure), width="stretch", key=key, **options)
    else:
        st.altair_chart(figure, width="stretch", key=key, **options)
