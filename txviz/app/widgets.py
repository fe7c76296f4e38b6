"""Widgets several pages share: the layer-and-head picker, a range slider, clickable head grids, a
corpus input, steering controls, figures side by side, and a progress bar around a slow call."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import streamlit as st

from txviz import page_map
from txviz.app import navigation, projector, ui
from txviz.figures import grids
from txviz.heads import corpus
from txviz.interventions import steering

T = TypeVar("T")
Progress = Callable[[float, str], None]  # (fraction done, what is happening)
CORPUS_SOURCES = ("Shipped examples", "Your text", "Upload a .txt corpus")


def index_picker(
    label: str,
    count: int,
    key: str,
    default: int = 0,
    widget: str = "slider",
    where=st,
    help: str | None = None,
) -> int:
    """One layer or head number in [0, count): a slider (or number box), a caption when there is one.

    Its value comes, in order, from this session (a grid click or an earlier choice, kept in range when
    the model changes), a shared link, then ``default``. A slider cannot span a single value, so a
    model with one layer or one head gets a caption instead.
    """
    if count <= 1:
        st.session_state[key] = 0  # the link and a later model with more layers read it
        where.caption(f"{label} 0 (the only one)")
        return 0
    if key in st.session_state:  # set by this session: keep it in range, pass no value (it would clash)
        st.session_state[key] = min(max(int(st.session_state[key]), 0), count - 1)
        value = {}
    else:
        value = {"value": ui.link_value(key, min(max(default, 0), count - 1), range(count))}
    make = where.slider if widget == "slider" else where.number_input
    return int(make(label, 0, count - 1, key=key, help=help, **value))


def layer_head_picker(
    n_layers: int,
    n_heads: int,
    keys: tuple[str, str] = ("layer", "head"),
    default: tuple[int, int] = (0, 0),
    widget: str = "slider",
    columns: Sequence[Any] | None = None,
    labels: tuple[str, str] = ("Layer", "Head"),
    helps: tuple[str | None, str | None] = (None, None),
) -> tuple[int, int]:
    """A layer and a head, side by side (or in the given two columns); see index_picker."""
    left, right = columns if columns is not None else st.columns(2)
    layer = index_picker(labels[0], n_layers, keys[0], default[0], widget, left, helps[0])
    head = index_picker(labels[1], n_heads, keys[1], default[1], widget, right, helps[1])
    return layer, head


def range_picker(label: str, high: int, key: str, default: tuple[int, int], where=st) -> tuple[int, int]:
    """A range slider over [0, high] whose value stays inside when ``high`` changes under it (a new text).

    Its value comes from this session, a shared link, then ``default``; the range is never empty.
    """
    pair = lambda v: len(v) == 2 and all(type(x) is int for x in v)  # noqa: E731
    a, b = st.session_state.get(key, ui.link_value(key, list(default), pair))
    a, b = min(max(a, 0), high - 1), min(max(b, 1), high)
    st.session_state[key] = (a, max(b, a + 1))
    first, last = where.slider(label, 0, high, st.session_state[key], key=key)
    return int(first), int(last)


def linked_slider(
    label: str, key: str, default: float, step: float, low: float = 0.0, high: float = 1.0, where=st, **kwargs
) -> float:
    """A slider over [low, high] (a share by default) whose value comes from a shared link when in range."""
    value = ui.link_value(key, default, lambda v: low <= v <= high)
    return where.slider(label, low, high, value, step, key=key, **kwargs)


def linked_count(label: str, key: str, default: int = 0, step: int = 1, where=st, **kwargs) -> int:
    """A number box from 0 up (a seed, a count) whose value comes from a shared link when not negative."""
    value = ui.link_value(key, default, lambda v: v >= 0)
    return where.number_input(label, min_value=0, value=value, step=step, key=key, **kwargs)


def linked_toggle(label: str, key: str, default: bool = False, where=st, **kwargs) -> bool:
    """A toggle whose state comes from a shared link, else ``default``."""
    return where.toggle(label, ui.link_value(key, default), key=key, **kwargs)


def linked_radio(label: str, options: Sequence[T], key: str, where=st, **kwargs) -> T:
    """A horizontal radio whose choice comes from a shared link when it is one of ``options``."""
    return where.radio(label, options, index=ui.link_index(key, options), horizontal=True, key=key, **kwargs)


def steering_sets(
    keys: tuple[str, str], defaults: tuple[str, str], max_chars: int = 4000
) -> tuple[list, list]:
    """Two prompt sets side by side, one prompt a line: what to steer towards and away from."""
    towards_col, away_col = st.columns(2)
    labels = ("Steer towards (one prompt per line)", "Away from (one prompt per line)")
    sets = []
    for column, label, key, default in zip((towards_col, away_col), labels, keys, defaults, strict=True):
        typed = column.text_area(
            label, ui.link_value(key, default), key=key, max_chars=ui.max_text_chars(max_chars)
        )
        sets.append(steering.prompt_lines(typed))
    return sets[0], sets[1]


def steering_strength(
    n_layers: int,
    keys: tuple[str, str],
    default_strength: float,
    columns: Sequence[Any],
    layer_label: str = "Layer",
    widget: str = "slider",
) -> tuple[int, float]:
    """The layer a steering vector is added after (a third of the way in by default) and its strength."""
    layer_col, strength_col = columns
    layer = index_picker(layer_label, n_layers, keys[0], n_layers // 3, widget, layer_col)
    strength = linked_slider("Strength", keys[1], default_strength, 0.5, -10.0, 10.0, strength_col)
    return layer, float(strength)


def pick_from_grid(chart_key: str, keys: tuple[str, str]) -> None:
    """A grid's click callback: the clicked cell becomes the picker's layer and head."""
    event = st.session_state.get(chart_key) or {}
    picked = grids.picked_head(event.get("selection"))
    if picked is not None:
        st.session_state[keys[0]], st.session_state[keys[1]] = picked


def head_grid(chart, key: str, keys: tuple[str, str] = ("layer", "head")) -> None:
    """A clickable [layer, head] grid (grids.head_grid): a click picks that head in the picker of ``keys``."""
    with projector.on_stage():
        projector.draw(chart, key, on_select=lambda: pick_from_grid(key, keys), selection_mode=grids.PICK)
        ui.export_menu(chart, key)


def side_by_side(
    figures: Sequence[Any], keys: Sequence[str] | None = None, widths: Sequence[int] | None = None
) -> None:
    """Figures in columns of the page, one each (equal widths unless given); in projector mode the row
    goes on the stage whole when it holds the page's first figure."""
    with projector.on_stage():
        columns = st.columns(list(widths) if widths else len(figures))
        for i, (column, figure) in enumerate(zip(columns, figures, strict=True)):
            with column:
                ui.show_figure(figure, key=keys[i] if keys else None)


def with_progress(label: str, work: Callable[[Progress], T]) -> T:
    """``work(progress)`` under a progress bar that it moves; bad input shows as a message."""
    bar = st.progress(0.0, label)
    try:
        with ui.user_errors():
            return work(lambda done, text=label: bar.progress(min(max(float(done), 0.0), 1.0), text))
    finally:
        bar.empty()


def corpus_input(
    prefix: str, default_text: str, upload: bool = True, max_texts: int = 8, label: str = "Texts"
) -> corpus.Corpus:
    """Passages to run on: the shipped examples, typed text (blank lines part passages) or a .txt file.

    Widget keys are ``{prefix}_source``, ``{prefix}_text`` and ``{prefix}_upload``.
    """
    sources = list(CORPUS_SOURCES if upload else CORPUS_SOURCES[:2])
    source = st.radio(label, sources, horizontal=True, key=f"{prefix}_source")
    if source == "Your text":
        typed = st.text_area(
            "Your text (blank lines separate passages)",
            default_text,
            key=f"{prefix}_text",
            max_chars=ui.max_text_chars(),
        )
        with ui.user_errors():
            texts = corpus.from_text(typed, max_texts=max_texts)
    elif source == CORPUS_SOURCES[2]:
        file = st.file_uploader("A UTF-8 .txt file", type=["txt"], key=f"{prefix}_upload")
        if file is None:
            st.info("Choose a .txt file: its paragraphs are the passages.")
            st.stop()
        with ui.user_errors():
            texts = corpus.from_text(ui.decode_upload(ui.checked_upload(file), file.name))
    else:
        texts = corpus.default_corpus()
    return texts


def page_link_to(page: str, label: str, icon: str, **settings) -> None:
    """A link that opens the page of that name with ``settings`` as its link values (JSON, as links.py
    reads them); a setting the page does not keep is a mistake here, raised at once."""
    refusal = page_map.page(page).refusal(settings)
    if refusal:
        raise ValueError(refusal)
    st.page_link(
        navigation.page_of(page),
        label=label,
        icon=icon,
        query_params={k: json.dumps(v) for k, v in settings.items()},
    )


def explorer_head_link(name: str, text: str, layer: int, head: int, label: str = "") -> None:
    """A link that opens the Attention Explorer on ``text`` at this layer and head."""
    label = label or f"Open layer {layer}, head {head} in the Attention Explorer"
    page_link_to("Attention_Explorer", label, ":material/open_in_new:",
                 model=name, text=text, layer=layer, head=head)  # fmt: skip


def ablate_head_link(name: str, text: str, layer: int, head: int, on: str) -> None:
    """A link that opens Interventions with this head ablated on ``text`` (its metric reads next-token logits)."""
    page_link_to("Interventions", f"Test this head: ablate layer {layer}, head {head} on {on}",
                 ":material/content_cut:", model=name, text=text, target="head", iv_layer=layer, iv_head=head,
                 metric="log_probability", answer="")  # fmt: skip


def why_attend_link(name: str, text: str, layer: int, head: int, **picks: int | str) -> None:
    """A link that opens Why Attend on this head and text (``picks``: why_query, why_key, why_mode...)."""
    page_link_to("Why_Attend", f"Why does layer {layer}, head {head} attend where it does? Split its scores",
                 ":material/join_inner:", model=name, why_text=text, why_layer=layer, why_head=head,
                 **picks)  # fmt: skip
