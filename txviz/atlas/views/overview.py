"""The Head Atlas's Map and Two models tabs: every head at once, on a grid, a scatter and a finder, and
beside a second model's atlas."""

from __future__ import annotations

import numpy as np
import streamlit as st

from txviz.app import projector, teaching, ui, widgets
from txviz.atlas import figures, opening, view_model
from txviz.atlas.atlas import Settings
from txviz.atlas.views import Opened
from txviz.atlas.views.opened import atlas_of
from txviz.figures import grids


def metric_picker(shown: Opened, label: str, key: str, default: str) -> str:
    names, by_name = [m.name for m in shown.metrics], shown.by_name
    default = default if default in names else names[0]
    return st.selectbox(label, names, key=key, format_func=lambda n: by_name[n].label,
                        index=names.index(ui.link_value(key, default, names)))  # fmt: skip


def _open_head(picked: tuple[int, int] | None) -> None:
    """A head picked on the map: its page opens (the Head tab)."""
    if picked is not None:
        st.session_state["layer"], st.session_state["head"] = picked
        st.session_state["atlas_view"] = "Head"


def _pick_from_grid() -> None:
    _open_head(grids.picked_head((st.session_state.get("atlas_grid") or {}).get("selection")))


def _pick_from_scatter() -> None:
    _open_head(figures.picked_point((st.session_state.get("atlas_scatter") or {}).get("selection")))


def _pick_from_finder() -> None:
    rows = st.session_state["atlas_finder"].selection.rows
    table = st.session_state.get("_finder_rows")
    if rows and table is not None:
        _open_head(tuple(int(v) for v in table[rows[0]]))


def map_view(loaded, shown: Opened) -> None:
    """Every head coloured by one metric, two metrics against each other, and the Head Finder's table."""
    atlas, by_name, layer, head = shown.atlas, shown.by_name, shown.layer, shown.head
    metric = by_name[metric_picker(shown, "Colour the grid by", "metric", "previous_token")]
    st.caption(f"{metric.label}: {metric.description}."
               + (f" In this bidirectional model: {metric.encoder_note}." if metric.encoder_note and not atlas.causal else ""))  # fmt: skip
    grid, scatter = ui.figure_columns(2)  # in projector mode the map and its scatter come first
    with grid:
        chart = grids.head_grid(atlas.scores[metric.name], f"{atlas.model}: {metric.label} (click a head)",
                                "score", (layer, head), ui.presenting())  # fmt: skip
        projector.draw(chart, "atlas_grid", on_select=_pick_from_grid, selection_mode=grids.PICK)
        ui.export_menu(chart, "atlas_grid")
        teaching.notice(
            "each cell is one head's score over the whole corpus; a click opens that head's page."
        )
    with scatter:
        a, b = st.columns(2)
        with a:
            x = by_name[metric_picker(shown, "x", "metric_x", "previous_token")]
        with b:
            y = by_name[metric_picker(shown, "y", "metric_y", "entropy")]
        figure = figures.scatter(atlas, x, y, (layer, head), ui.presenting())
        projector.draw(figure, "atlas_scatter", on_select=_pick_from_scatter, selection_mode="points")
        ui.export_menu(figure, "atlas_scatter")
    st.subheader("Head Finder (click a row to open the head's page)")
    a, b = st.columns(2)
    with a:
        rank = metric_picker(shown, "Rank by", "finder_rank", metric.name)
    with b:
        chosen = st.multiselect("Layers (all when empty)", list(range(atlas.layers)), key="finder_layers")
    table = view_model.finder(atlas, shown.metrics, rank, chosen)
    st.session_state["_finder_rows"] = table[["layer", "head"]].to_numpy()
    st.dataframe(table, hide_index=True, key="atlas_finder", on_select=_pick_from_finder,
                 selection_mode="single-row", height=320)  # fmt: skip


def pair_view(loaded, shown: Opened) -> None:
    """A second model's atlas over the same corpus: both grids on one scale, paired heads when they match."""
    atlas, by_name, corpus, window = shown.atlas, shown.by_name, shown.corpus, shown.window
    other_name = ui.model_picker(kinds=("encoder", "decoder"), default="smollm2", key="model_b",
                                 label="Second model")  # fmt: skip
    other = ui.load_model(other_name, kinds=("encoder", "decoder"))
    other_settings = Settings(window=min(window, other.n_ctx or window))
    if not (opening.stored(other, corpus, other_settings) or opening.quick(other, corpus)) and not st.button(
        f"Build {other_name}'s atlas over {corpus.name} (once: then stored)", key="cmp_build", type="primary"
    ):
        st.info(f"{other_name}'s atlas over this corpus is not stored yet. Building it runs the corpus through "
                "the model once, with its progress and the time left, and stores it for every later visit.")  # fmt: skip
        return
    second, second_notices = atlas_of(other, corpus, window)
    for notice in second_notices:
        st.warning(notice)
    common = [n for n in by_name if n in second.scores and np.isfinite(second.scores[n]).any()]
    if not common:
        st.info("The two atlases share no measured metric.")
        return
    metric = by_name[st.selectbox("Metric", common, key="cmp_metric", format_func=lambda n: by_name[n].label,
                                  index=ui.link_index("cmp_metric", common))]  # fmt: skip
    bounds = np.concatenate([a.scores[metric.name].ravel() for a in (atlas, second)])
    bounds = bounds[np.isfinite(bounds)]
    domain = (float(bounds.min()), float(bounds.max())) if bounds.size else None
    widgets.side_by_side(
        [grids.head_grid(a.scores[metric.name], f"{a.model}: {metric.label}", "score", None,
                         ui.presenting(), domain) for a in (atlas, second)],
        keys=["cmp_grid_a", "cmp_grid_b"],
    )  # fmt: skip
    if view_model.same_shape(atlas, second):
        ui.show_figure(figures.pair(atlas, second, metric), key="cmp_pair")
    else:
        st.caption(f"{atlas.model} has {atlas.layers} x {atlas.heads} heads and {second.model} "
                   f"{second.layers} x {second.heads}: their heads do not pair up, so only the grids compare.")  # fmt: skip
