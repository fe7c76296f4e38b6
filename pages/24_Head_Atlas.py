"""Head Atlas: every head of a model scored over a whole corpus once, stored, and given its own page.

A page beside Head Detectors, not inside it: the detectors score one text or a few passages live, in
seconds, for the question at hand; the atlas streams a corpus through the model once, stores every
head's scores and top contexts on disk, and then opens instantly, with a link per head.
"""

import numpy as np
import streamlit as st

from txviz.app import atlas_head, projector, teaching, ui, widgets
from txviz.atlas import corpus as corpora
from txviz.atlas import figures, opening, view_model
from txviz.atlas.atlas import Settings
from txviz.core.tokens import readable_tokens
from txviz.figures import grids

VIEWS = ["Map", "Head", "Two models"]
UPLOAD = "Upload a text file"
PICKED = ("layer", "head")


ui.setup_page(
    "Head_Atlas",
    "What does each head of this model do across a corpus? The atlas runs the corpus through the model "
    "once, in windows, and keeps per head its scores (previous token, induction, sink, local share, "
    "distance, entropy...) and the contexts where it attends most, as token positions; stored on disk, "
    "it opens instantly after. Every head has its own page and link.",
)  # fmt: skip

name = ui.model_picker(kinds=("encoder", "decoder"))
loaded = ui.load_model(name, kinds=("encoder", "decoder"))
METRICS = opening.metrics()


@ui.shared_resource(max_entries=4)
def _shipped(corpus_name: str):
    return opening.shipped()[corpus_name]()


def corpus_choice():
    """The corpus: one an installed package ships, or an upload."""
    names = [*opening.shipped(), UPLOAD]
    choice = st.radio(
        "Corpus", names, key="atlas_corpus", index=ui.link_index("atlas_corpus", names), horizontal=True
    )
    if choice != UPLOAD:
        return _shipped(choice)
    file = st.file_uploader(
        f"A UTF-8 text file (the first {corpora.MAX_UPLOAD_BYTES:,} bytes are read)",
        type=["txt", "md", "py", "rst"],
        key="atlas_upload",
    )
    if file is None:
        st.info("Choose a text file: the atlas is built over its tokens.")
        st.stop()
    with ui.user_errors():
        return opening.from_upload(file.name, ui.checked_upload(file))


@ui.cached(max_entries=4, progress="Building the atlas...")
@ui.heavy
def _atlas(loaded, corpus, settings: Settings, progress):
    return opening.open_or_build(loaded, corpus, settings, progress)


def atlas_of(model, corpus, window: int):
    """The model's atlas over the corpus (opened from disk, or built once with a progress bar)."""
    with ui.user_errors():
        return _atlas(model, corpus, Settings(window=min(window, model.n_ctx or window)))


@ui.cached(max_entries=32, spinner="Running the context's window...")
@ui.heavy
def _row(loaded, ids: tuple[int, ...], layer: int, head: int, query: int) -> np.ndarray:
    return opening.attention_row(loaded, ids, layer, head, query)


def pieces(ids: list[int]) -> list[str]:
    return view_model.text_pieces(loaded.tokenizer, ids)


def corpus_slice(whole):
    """How much of the corpus to read: a first slice that builds in seconds, up to all of it."""
    sizes = [n for n in opening.READ_CHARS if n < len(whole.text)]
    if not sizes:
        return whole
    offered = [*sizes, len(whole.text)]
    chars = st.select_slider(
        f"Characters read ({whole.name} has {len(whole.text):,})",
        offered,
        value=ui.link_value("atlas_chars", sizes[0], offered),
        key="atlas_chars",
        format_func=lambda n: "all" if n == len(whole.text) else f"first {n:,}",
        help="The first slice opens in seconds; the whole corpus takes minutes once, then opens from disk.",
    )
    return corpora.first(whole, chars)


corpus = corpus_slice(corpus_choice())
st.caption(f"{corpus.name}: {len(corpus.text):,} characters.")
if corpus.notice:
    st.warning(corpus.notice)
left, right = st.columns(2)
window = left.number_input("Tokens per window", 8, 1024, ui.link_value("atlas_window", 256, range(8, 1025)),
                           key="atlas_window")  # fmt: skip
settings = Settings(window=min(int(window), loaded.n_ctx or int(window)))
# A stored atlas, or a corpus small enough to build in seconds, opens by itself; a link naming a head too.
ready = len(corpus.text) <= opening.SMALL_CORPUS_CHARS or opening.stored(loaded, corpus, settings)
current, before = [name, corpus.hash, settings.window], st.session_state.get("_atlas_for")
st.session_state["_atlas_for"] = current
if before is None:  # this session's first view: a link naming a head opens its atlas
    ready = ready or "layer" in st.query_params
elif before != current and "atlas_open" in st.session_state:
    st.session_state["atlas_open"] = bool(ready)  # another model or corpus: opened only if quick
value = {} if "atlas_open" in st.session_state else {"value": ui.link_value("atlas_open", bool(ready))}
opened = right.toggle(
    "Open the atlas (built once over the corpus, then stored)",
    key="atlas_open",
    help="Building runs the whole corpus through the model; a stored atlas opens at once.",
    **value,
)
if not opened:
    st.info("Switch on 'Open the atlas' to build this model's atlas over the corpus (once: it is stored).")
    atlas_head.weights_only(loaded, name)
    st.stop()
atlas, notices = atlas_of(loaded, corpus, int(window))
for notice in notices:
    st.warning(notice)
metrics = view_model.measured(atlas, METRICS)
by_name = {m.name: m for m in metrics}
names = list(by_name)
if not names:
    st.error("No metric could be measured on this corpus: try a longer one.")
    st.stop()
st.caption(
    f"{atlas.model} over {atlas.corpus}: {atlas.n_tokens:,} tokens in {len(atlas.tokens)} windows of "
    f"{atlas.settings.window}, {atlas.layers} layers x {atlas.heads} heads; built in {atlas.seconds:.1f} s."
)


def metric_picker(label: str, key: str, default: str) -> str:
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


layer, head = widgets.layer_head_picker(atlas.layers, atlas.heads, PICKED, widget="number",
                                        columns=st.columns(2))  # fmt: skip
if "_atlas_tab" not in st.session_state:  # a link naming a head opens on its page
    head_link = "layer" in st.query_params and "atlas_view" not in st.query_params
    st.session_state["_atlas_tab"] = "Head" if head_link else ui.link_tab("atlas_view", VIEWS)
map_tab, head_tab, pair_tab = st.tabs(VIEWS, key="atlas_view", on_change="rerun",
                                      default=st.session_state["_atlas_tab"])  # fmt: skip


def map_view() -> None:
    metric = by_name[metric_picker("Colour the grid by", "metric", "previous_token")]
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
            x = by_name[metric_picker("x", "metric_x", "previous_token")]
        with b:
            y = by_name[metric_picker("y", "metric_y", "entropy")]
        figure = figures.scatter(atlas, x, y, (layer, head), ui.presenting())
        projector.draw(figure, "atlas_scatter", on_select=_pick_from_scatter, selection_mode="points")
        ui.export_menu(figure, "atlas_scatter")
    st.subheader("Head Finder (click a row to open the head's page)")
    a, b = st.columns(2)
    with a:
        rank = metric_picker("Rank by", "finder_rank", metric.name)
    with b:
        chosen = st.multiselect("Layers (all when empty)", list(range(atlas.layers)), key="finder_layers")
    table = view_model.finder(atlas, metrics, rank, chosen)
    st.session_state["_finder_rows"] = table[["layer", "head"]].to_numpy()
    st.dataframe(table, hide_index=True, key="atlas_finder", on_select=_pick_from_finder,
                 selection_mode="single-row", height=320)  # fmt: skip


def head_view() -> None:
    st.subheader(f"Layer {layer}, head {head}")
    shown = [m for m in metrics if np.isfinite(atlas.scores[m.name][layer, head])]
    ui.show_figure(
        figures.standing(atlas, shown or metrics, layer, head, ui.presenting()), key="atlas_standing"
    )
    st.dataframe(
        [{"metric": m.label, "score": atlas.score(m.name, layer, head),
          "percentile among heads": round(view_model.percentile(atlas, m.name, layer, head), 1)} for m in metrics],
        hide_index=True,
    )  # fmt: skip
    criteria = list(atlas.contexts)
    criterion = st.selectbox("Top contexts by", criteria, key="criterion",
                             index=ui.link_index("criterion", criteria),
                             format_func=lambda c: {"attention": "largest attention weight to a non-sink key",
                                                    "output": "largest head output norm"}.get(c, c))  # fmt: skip
    table = view_model.context_table(atlas, criterion, layer, head, pieces)
    if table.empty:
        st.info("This head has no stored context.")
    else:
        st.caption("The key in [[ ]], the query in << >>.")
        st.dataframe(table, hide_index=True, height=300)
        ranks = table["rank"].tolist()
        rank = st.selectbox("Draw the attention of context", ranks, key="context",
                            index=ui.link_index("context", ranks))  # fmt: skip
        row = table[table["rank"] == rank].iloc[0]
        ids = view_model.window_ids(atlas, int(row["window"]))
        query, key = int(row["query"]), int(row["key"])
        with ui.user_errors():
            weights = _row(loaded, tuple(ids), layer, head, query)
        labels, _ = readable_tokens(loaded.tokenizer, ids)
        ui.show_figure(figures.row_bars(labels, weights, query, key,
                                        f"Layer {layer}, head {head}: the query's attention (key in red)"),
                       key="atlas_row")  # fmt: skip
        st.text(row["text"])
        atlas_head.links(loaded, name, ids, layer, head, query, key)
    bands = view_model.band_table(atlas, criterion, layer, head, pieces)
    if not bands.empty:
        st.subheader("Below the top: a sample from each decile band")
        st.dataframe(bands, hide_index=True, height=260)
    atlas_head.summary(loaded, layer, head)


def pair_view() -> None:
    other_name = ui.model_picker(kinds=("encoder", "decoder"), default="smollm2", key="model_b",
                                 label="Second model")  # fmt: skip
    other = ui.load_model(other_name, kinds=("encoder", "decoder"))
    other_settings = Settings(window=min(int(window), other.n_ctx or int(window)))
    if not (opening.stored(other, corpus, other_settings) or opening.quick(other, corpus)) and not st.button(
        f"Build {other_name}'s atlas over {corpus.name} (once: then stored)", key="cmp_build", type="primary"
    ):
        st.info(f"{other_name}'s atlas over this corpus is not stored yet. Building it runs the corpus through "
                "the model once, with its progress and the time left, and stores it for every later visit.")  # fmt: skip
        return
    second, second_notices = atlas_of(other, corpus, int(window))
    for notice in second_notices:
        st.warning(notice)
    common = [n for n in names if n in second.scores and np.isfinite(second.scores[n]).any()]
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


if map_tab.open:
    with map_tab:
        map_view()
if head_tab.open:
    with head_tab:
        head_view()
if pair_tab.open:
    with pair_tab:
        pair_view()
