"""The Streamlit pieces every page shares: page setup, model picking and loading, text input."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import streamlit as st

from txviz import models, page_map
from txviz.app import legacy_pages, links, navigation, projector, sessions
from txviz.app.caching import cached, cached_data, clear_cached, heavy, shared_resource  # noqa: F401 (pages' names)
from txviz.app.lecture import path, room, room_bars, tour
from txviz.app.links import MAX_LINK_CHARS, link_index, link_set, link_tab, link_value  # noqa: F401 (pages' names)
from txviz.app.sessions import max_text_chars
from txviz.core.errors import UserError, require_kind
from txviz.figures import export
from txviz.models import LoadedModel, ModelLoadError

log = logging.getLogger(__name__)

OTHER_MODEL = "Other: a Hugging Face id or local folder..."
MODELS_KEPT = 4  # loaded models held for every session; the least recently used one is dropped


def setup_page(page: str, intro: str = "", icon: str = navigation.FAVICON) -> None:
    """Page config, title, intro, the sidebar's presentation, lesson and device controls, the link,
    and Back/Next on the pages of the "Start here" path.

    ``page`` is the page's name in the page map (txviz/page_map.py), which gives its heading and the
    settings its link keeps; any other text is the heading of a page outside the map (the home page,
    a test's page), which keeps no settings."""
    entry = page_map.BY_NAME.get(page)
    title = entry.heading if entry else page
    page, share = (entry.name, entry.keys) if entry else ("", ())
    legacy_pages.take_over()  # before any widget: a fresh server's first run restarts here
    presenting_now = presentation_toggle()  # first: the page's config folds the sidebar away by it
    st.set_page_config(
        page_title=f"{title} · txviz",
        page_icon=icon,
        layout="wide",
        initial_sidebar_state="collapsed" if presenting_now else "auto",
    )
    sessions.config()  # read once per server and installed in core, whose limits then follow it
    st.session_state["_figure_count"] = 0
    st.html(projector.SIDEBAR_CSS)  # our own constant stylesheets, never user text
    lesson_picker()
    if presenting_now:
        st.html(projector.PRESENTATION_CSS)
        heading, leave = st.columns([3, 1], vertical_alignment="center")
        heading.title(title)
        leave.button(
            "Leave projector",
            key="_leave_projector",
            on_click=projector.choose,
            args=(False,),
            icon=":material/close_fullscreen:",
            width="stretch",
        )
    else:
        st.title(title)
    if intro and not presenting_now:  # the lecturer says it: the room sees the figure sooner
        st.caption(intro)
    room_bars.room_bar(
        page, title, load_model
    )  # in a lecture room: the lecturer's controls or the follow bar
    if not (room.code() or tour.active()):  # one sequence drives the screen: a room's or a tour's bar
        path.back_and_next(page)
    tour.lecture_bar(page, load_model)
    projector.open_stage()  # in projector mode the first figure is drawn here, above the page's controls
    device_picker()
    projector.keep_in_link()
    _write_link(share)


def presentation_toggle() -> bool:
    """The sidebar switch; kept for the whole session (page switches and lessons) and in links."""
    projector.restore()
    return st.sidebar.toggle(
        "Presentation mode",
        key=projector.KEY,
        help="For a projector: large fonts in the text and every figure, the sidebar folded away, "
        "a projector-safe colour scale. Links keep it (present=true).",
        on_change=projector.choose,
    )


def _choose_lesson() -> None:
    st.session_state["_lesson_to_open"] = st.session_state.get("lesson")


def open_lesson(title: str) -> None:
    """A callback: open the lesson of that title at the next run (as picking it in the sidebar does)."""
    st.session_state["_lesson_to_open"] = title


def lesson_picker() -> None:
    """Sidebar presets: opening one switches page with its settings and shows its talking points."""
    from txviz.app.lecture.lessons import load_lessons

    lessons = {lesson.title: lesson for lesson in load_lessons()}
    st.sidebar.selectbox(
        "Lesson",
        list(lessons),
        index=None,
        placeholder="Open a lesson...",
        key="lesson",
        on_change=_choose_lesson,
    )
    opening = lessons.get(st.session_state.pop("_lesson_to_open", None) or "")
    if opening:
        step = opening.steps[0]
        for key in step.settings:  # widget state from this session would win over the link
            st.session_state.pop(key, None)
        st.session_state["_lesson_shown"] = opening.title
        st.switch_page(
            page_map.page(step.page).file, query_params=step.query_params() | projector.link_params()
        )
    shown = lessons.get(st.session_state.get("_lesson_shown") or "")
    if shown:
        with st.sidebar.expander(f"Lesson: {shown.title}", expanded=True):
            for point in shown.steps[0].points:
                st.markdown(f"- {point}")


def _write_link(keys: tuple[str, ...]) -> None:
    """Keep the page's settings in the URL and offer the address in the sidebar's copy-link control."""
    links.write_link(keys)
    links.copy_link()


def presenting() -> bool:
    """Presentation mode is on: pass it to figure builders, which pick their colour scales by kind."""
    return projector.presenting()


def device_picker() -> str:
    """Sidebar choice, under "Advanced", of device ('auto' is CUDA when present, else CPU) and of the
    weights' precision."""
    with st.sidebar.expander("Advanced", icon=":material/settings:"):
        return _device_and_precision()


def _device_and_precision() -> str:
    options = ["auto", "cpu"] + (["cuda"] if models.default_device() == "cuda" else [])
    choice = st.selectbox("Device", options, key="device", help="Where models run.")
    device = models.default_device(choice)
    offered = models.precisions(device)
    if st.session_state.get("precision") not in offered:  # float16 chosen on a GPU, then the CPU picked
        st.session_state.pop("precision", None)
    dtype = st.selectbox(
        "Precision",
        offered,
        key="precision",
        help="Of the model's weights. float32 is exact; bfloat16 halves their memory"
        + (
            " and float16 too; both are faster on a GPU."
            if "float16" in offered
            else " (float16 needs a GPU)."
        )
        + " Records are float32 in every case.",
    )
    if dtype != "float32":
        st.caption(models.REDUCED_NOTE.format(dtype=dtype))
    return device


def current_device() -> str:
    return models.default_device(st.session_state.get("device", "auto"))


def current_dtype() -> str:
    """The chosen precision of the weights, where the current device offers it; else float32."""
    dtype = st.session_state.get("precision", "float32")
    return dtype if dtype in models.precisions(current_device()) else "float32"


def model_picker(
    kinds: tuple[str, ...] = ("encoder", "decoder"),
    default: str = "minilm",
    key: str = "model",
    label: str = "Model",
) -> str:
    """A model name from the registry (of the given kinds), or one the user types."""
    names = sessions.offered_models(models.names(kinds))
    options = names if sessions.config().public else names + [OTHER_MODEL]
    default = link_value(key, default, options)
    index = options.index(default) if default in options else 0
    choice = st.selectbox(label, options, index=index, key=key, format_func=_marked)
    if choice != OTHER_MODEL:
        return choice
    typed = st.text_input(
        "Hugging Face id or folder",
        key=f"{key}_custom",
        placeholder="e.g. bert-base-uncased or /path/to/model",
        help="Loaded with trust_remote_code off. Hub ids need a network or a local cache.",
        max_chars=max_text_chars(1_000),
    )
    if not typed.strip():
        st.info("Type a model id or folder to load it.")
        st.stop()
    return typed.strip()


_check_gaps: dict[str, float] = {}  # model name -> self-check gap of a model that failed it (any session)


def _marked(name: str) -> str:
    """A picker's label: the name, marked when its self-check at load found different numbers."""
    gap = _check_gaps.get(name)
    return name if gap is None else f"{name} ⚠ differs from its own attention by {gap:.2g}"


@st.cache_resource(max_entries=MODELS_KEPT, show_spinner=False)
def _cached_model(name: str, device: str, dtype: str = "float32") -> LoadedModel:
    # Shared by every session: read-only after loading; per-call settings travel in a ContextVar.
    # Nothing else may hold a LoadedModel for longer than a run, or eviction would not free it.
    return models.load(name, device, dtype=dtype)


def load_model(name: str, kinds: tuple[str, ...] | None = None, dtype: str | None = None) -> LoadedModel:
    """The cached model, loaded with a progress note; a clear error and a stop on failure.

    ``dtype`` overrides the sidebar's precision for a page whose numbers need one (Why Attend: float32).
    """
    device, dtype = current_device(), dtype or current_dtype()
    where = device if dtype == "float32" else f"{device} in {dtype}"
    with user_errors():
        sessions.check_allowed(name, models.names())
    note = st.empty()
    try:
        with note.status(f"Loading {name} on {where}...", expanded=False) as status:
            if name == "smollm2":
                status.write(
                    "The first load converts SmolLM2 once (about 20 s); later ones take under a second."
                )
            loaded = _cached_model(name, device, dtype)
            status.update(label=f"{name} ready on {where}", state="complete")
        if projector.presenting():  # the room needs the figure, not the note that the model is ready
            note.empty()
    except ModelLoadError as error:
        # A listed model that fails to load is the operator's to fix; a visitor's hub id or folder
        # is their own input, so it stays out of the line and its failure is routine.
        listed = name in models.names()
        level, which = (logging.WARNING, name) if listed else (logging.INFO, "a typed model")
        log.log(level, "%s failed to load on %s", which, where, exc_info=True)
        st.error(str(error))
        st.stop()
    if loaded.check_warning:  # the self-check at load: shown on every page that uses this model
        _check_gaps[name] = loaded.check_gap
        st.warning(loaded.check_warning)
    if kinds:
        with user_errors():
            require_kind(loaded, kinds, "run on this page")
    return loaded


@contextmanager
def user_errors() -> Iterator[None]:
    """Show a UserError (bad input, a failed load, a wrong model kind) in the page, then stop.

    Only UserError: any other exception, a plain ValueError included, is a bug and surfaces as one.
    """
    try:
        yield
    except UserError as error:
        st.error(str(error))
        st.stop()


def decode_upload(data: bytes, name: str = "file") -> str:
    """Text of an uploaded .txt file, or a clear UserError for binary or non-UTF-8 data."""
    if b"\x00" in data[:8192]:
        raise UserError(f"{name} looks like a binary file, not text. Upload a UTF-8 .txt file.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UserError(
            f"{name} is not UTF-8 text (byte {error.start} cannot be read). Save it as UTF-8 and retry."
        ) from error


def checked_upload(upload) -> bytes:
    """An uploaded file's bytes, refused with a message past the server's upload limit."""
    limit = sessions.config().max_upload_mb
    if upload.size > limit * 1024 * 1024:
        st.error(f"{upload.name} is {upload.size / 1e6:.1f} MB; this server takes files up to {limit} MB.")
        st.stop()
    return upload.getvalue()


def text_input(label: str, default: str, key: str = "text", height: int = 120) -> str:
    """Text typed or pasted, or read from an uploaded .txt file; never rendered as HTML."""
    sources = ["Type or paste", "Upload a .txt file"]
    if projector.presenting():  # a projector shows the text box alone, so the figure starts higher
        source = sources[0]
    else:
        source = st.radio(f"{label} from", sources, horizontal=True, key=f"{key}_source")
    if source == "Type or paste":
        text = st.text_area(
            label,
            value=link_value(key, default),
            height=height,
            key=key,
            max_chars=max_text_chars(),
        )
    else:
        upload = st.file_uploader("A UTF-8 .txt file", type=["txt"], key=f"{key}_upload")
        if upload is None:
            st.info("Choose a .txt file to read.")
            st.stop()
        with user_errors():
            text = decode_upload(checked_upload(upload), upload.name)
        limit = max_text_chars()
        if len(text) > limit:
            st.warning(f"The file has {len(text):,} characters; the first {limit:,} are used.")
            text = text[:limit]
    if not text.strip():
        st.warning("The text is empty: type or upload some text first.")
        st.stop()
    return text


def page_tabs(
    views: Mapping[str, Callable[..., None]], *args, key: str = "view", default: str | None = None
) -> str:
    """The page's tabs, a view function each: only the open tab's view runs, given ``args``; returns
    its label. The tab set keeps ``key`` in the page's link, so a link or a lecture step opens a tab;
    without one it opens on ``default`` (else the first)."""
    labels = list(views)
    tabs = st.tabs(labels, key=key, on_change="rerun", default=link_tab(key, labels, default))
    for label, tab in zip(labels, tabs, strict=True):
        if tab.open:
            with tab:
                views[label](*args)
            return label
    return labels[0]


def show_figure(figure, key: str | None = None, trace=None, on_select=None, stage: bool = True) -> None:
    """A plotly or altair figure at the page's width, with its export menu; ``on_select`` (a callback)
    lets the reader drag a box on a plotly figure, its selection in st.session_state[key]. In projector
    mode the page's first figure goes on the stage (projector.open_stage) unless ``stage`` is False."""
    with projector.on_stage(stage):
        _show_figure(figure, key, trace, on_select)


def figure_columns(spec, **options):
    """``st.columns`` for the row that holds the page's first figure: in projector mode the row goes on
    the stage whole (the figure with what sits beside it), above the controls drawn before it."""
    with projector.on_stage():
        return st.columns(spec, **options)


def _show_figure(figure, key: str | None, trace, on_select) -> None:
    st.session_state["_figure_count"] = count = st.session_state.get("_figure_count", 0) + 1
    key = key or f"figure-{count}"
    # Colours were chosen by the builder (presenting=...); in projector mode a copy's fonts grow here.
    selecting = {"on_select": on_select, "selection_mode": ("box",)} if on_select else {}
    projector.draw(figure, key, **selecting)
    export_menu(figure, key, trace)


def export_menu(figure, key: str, trace=None) -> None:
    """Download buttons; files are made only when clicked (deferred), so reruns stay fast."""
    files = [("Interactive HTML", lambda: export.figure_html(figure), f"{key}.html", "text/html")]
    problem = (
        export.image_export_problem() if hasattr(figure, "to_plotly_json") else "Images: use the HTML file."
    )
    if not problem:
        files += [
            ("PNG (publication size)", lambda: export.figure_image(figure, "png"), f"{key}.png", "image/png"),
            (
                "SVG (publication size)",
                lambda: export.figure_image(figure, "svg"),
                f"{key}.svg",
                "image/svg+xml",
            ),
        ]
    files.append(("Numbers (JSON)", lambda: export.figure_numbers(figure), f"{key}.json", "application/json"))
    if trace is not None:
        files += [
            ("Tokens and weights (.npz)", lambda: export.trace_npz(trace), f"{key}-trace.npz", None),
            (
                "Tokens and weights (JSON)",
                lambda: export.trace_json(trace),
                f"{key}-trace.json",
                "application/json",
            ),
        ]
    with st.popover("Export", icon="⬇️"):
        for label, make, file_name, mime in files:
            st.download_button(label, make, file_name, mime, key=f"{key}-{file_name}", on_click="ignore")
        if problem:
            st.caption(problem)


@cached(max_entries=8)
def _cached_trace(loaded: LoadedModel, text: str, record: tuple[str, ...]):
    return sessions.trace(loaded, text, record)  # queued, in one pass with other sessions' texts


def cached_trace(loaded: LoadedModel, text: str, record: tuple[str, ...] = ("weights",)):
    """The attention trace of ``text`` under the page's model, shared by every session."""
    return _cached_trace(loaded, text, tuple(sorted(record)))
