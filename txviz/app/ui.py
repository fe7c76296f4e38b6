"""The Streamlit pieces every page shares: page setup, model picking and loading, text input."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Container, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import streamlit as st

from txviz import models
from txviz.app import legacy_pages, serving
from txviz.core.errors import UserError, require_kind
from txviz.core.trace import lock_arrays
from txviz.figures import export
from txviz.figures.colors import scale_name
from txviz.models import LoadedModel, ModelLoadError

T = TypeVar("T")
_CACHED: dict[str, Any] = {}  # every ui.cached store by its function's name, for clear_cached
OTHER_MODEL = "Other: a Hugging Face id or local folder..."
MAX_TEXT_CHARS = 100_000
MAX_LINK_CHARS = 1_500  # longer values stay out of the URL (browsers and chat apps cut long links)
PRESENTATION_CSS = """<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 22px; }
h1 { font-size: 3rem !important; }
[data-testid="stMarkdownContainer"] p, label, [data-testid="stCaptionContainer"] { font-size: 1.15rem !important; }
</style>"""


def setup_page(title: str, intro: str = "", icon: str = "🔍", share: tuple[str, ...] = ()) -> None:
    """Page config, title, intro, the sidebar's device and presentation toggles, and the link."""
    st.set_page_config(page_title=f"{title} · txviz", page_icon=icon, layout="wide")
    legacy_pages.take_over()
    st.session_state["_figure_count"] = 0
    lesson_picker()
    if st.sidebar.toggle(
        "Presentation mode", key="presentation", help="Large fonts and a projector-safe colour scale."
    ):
        st.html(PRESENTATION_CSS)  # our own constant stylesheet, never user text
    st.title(title)
    if intro:
        st.caption(intro)
    device_picker()
    if share:
        _write_link(share)


def _choose_lesson() -> None:
    st.session_state["_lesson_to_open"] = st.session_state.get("lesson")


def lesson_picker() -> None:
    """Sidebar presets: opening one switches page with its settings and shows its talking points."""
    from txviz.app.lessons import load_lessons

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
        for key in opening.settings:  # widget state from this session would win over the link
            st.session_state.pop(key, None)
        st.session_state["_lesson_shown"] = opening.title
        st.switch_page(opening.page, query_params=opening.query_params())
    shown = lessons.get(st.session_state.get("_lesson_shown") or "")
    if shown:
        with st.sidebar.expander(f"Lesson: {shown.title}", expanded=True):
            for point in shown.talking_points:
                st.markdown(f"- {point}")


def _write_link(keys: tuple[str, ...]) -> None:
    """Keep the page's settings in the URL so the address bar is a link back to this view."""
    too_long = []
    for key in keys:
        if key not in st.session_state:
            continue
        value = json.dumps(st.session_state[key])
        if len(value) > MAX_LINK_CHARS:
            too_long.append(key)
            st.query_params.pop(key, None)
        elif st.query_params.get(key) != value:
            st.query_params[key] = value
    if too_long:
        st.sidebar.caption(
            f"The {', '.join(too_long)} is too long to fit in a link; the link opens the rest of this view. "
            "Lesson presets can carry long texts."
        )


def link_value(key: str, default: Any, valid: Container | Callable[[Any], bool] | None = None) -> Any:
    """The value a shared link gives this setting, when it is valid; otherwise the default."""
    if key in st.session_state or key not in st.query_params:
        return default
    try:
        value = json.loads(st.query_params[key])
    except ValueError:
        return default
    if type(value) is not type(default) and not (isinstance(default, float) and isinstance(value, int)):
        return default
    ok = valid is None or (valid(value) if callable(valid) else value in valid)
    return value if ok else default


def presenting() -> bool:
    """Presentation mode is on: pass it to figure builders, which pick their colour scales by kind."""
    return bool(st.session_state.get("presentation"))


def color_scale() -> str:
    """The sequential scale's name for this session (viridis; cividis in presentation mode)."""
    return scale_name("sequential", presenting())


def device_picker() -> str:
    """Sidebar choice of device; 'auto' is CUDA when present, else CPU."""
    options = ["auto", "cpu"] + (["cuda"] if models.default_device() == "cuda" else [])
    choice = st.sidebar.selectbox("Device", options, key="device", help="Where models run.")
    return models.default_device(choice)


def current_device() -> str:
    return models.default_device(st.session_state.get("device", "auto"))


def model_picker(
    kinds: tuple[str, ...] = ("encoder", "decoder"),
    default: str = "minilm",
    key: str = "model",
    label: str = "Model",
) -> str:
    """A model name from the registry (of the given kinds), or one the user types."""
    names = serving.offered_models(models.names(kinds))
    options = names if serving.config().public else names + [OTHER_MODEL]
    default = link_value(key, default, options)
    index = options.index(default) if default in options else 0
    choice = st.selectbox(label, options, index=index, key=key)
    if choice != OTHER_MODEL:
        return choice
    typed = st.text_input(
        "Hugging Face id or folder",
        key=f"{key}_custom",
        placeholder="e.g. bert-base-uncased or /path/to/model",
        help="Loaded with trust_remote_code off. Hub ids need a network or a local cache.",
    )
    if not typed.strip():
        st.info("Type a model id or folder to load it.")
        st.stop()
    return typed.strip()


@st.cache_resource(max_entries=4, show_spinner=False)
def _cached_model(name: str, device: str) -> LoadedModel:
    # Shared by every session: read-only after loading; per-call settings travel in a ContextVar.
    return models.load(name, device)


def load_model(name: str, kinds: tuple[str, ...] | None = None) -> LoadedModel:
    """The cached model, loaded with a progress note; a clear error and a stop on failure."""
    device = current_device()
    with user_errors():
        serving.check_allowed(name, models.names())
    try:
        with st.status(f"Loading {name} on {device}...", expanded=False) as status:
            if name == "smollm2":
                status.write(
                    "The first load converts SmolLM2 once (about 20 s); later ones take under a second."
                )
            loaded = _cached_model(name, device)
            status.update(label=f"{name} ready on {device}", state="complete")
    except ModelLoadError as error:
        st.error(str(error))
        st.stop()
    if kinds:
        with user_errors():
            require_kind(loaded, kinds, "run on this page")
    return loaded


@contextmanager
def user_errors() -> Iterator[None]:
    """Show bad input or a failed load as a message in the page, then stop the script."""
    try:
        yield
    except ValueError as error:  # every UserError (ModelLoadError, WrongModelKind...) is a ValueError
        st.error(str(error))
        st.stop()


def decode_upload(data: bytes, name: str = "file") -> str:
    """Text of an uploaded .txt file, or a clear ValueError for binary or non-UTF-8 data."""
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
    limit = serving.config().max_upload_mb
    if upload.size > limit * 1024 * 1024:
        st.error(f"{upload.name} is {upload.size / 1e6:.1f} MB; this server takes files up to {limit} MB.")
        st.stop()
    return upload.getvalue()


def text_input(label: str, default: str, key: str = "text", height: int = 120) -> str:
    """Text typed or pasted, or read from an uploaded .txt file; never rendered as HTML."""
    source = st.radio(
        f"{label} from", ["Type or paste", "Upload a .txt file"], horizontal=True, key=f"{key}_source"
    )
    if source == "Type or paste":
        text = st.text_area(
            label,
            value=link_value(key, default),
            height=height,
            key=key,
            max_chars=serving.config().max_text_chars,
        )
    else:
        upload = st.file_uploader("A UTF-8 .txt file", type=["txt"], key=f"{key}_upload")
        if upload is None:
            st.info("Choose a .txt file to read.")
            st.stop()
        with user_errors():
            text = decode_upload(checked_upload(upload), upload.name)
        limit = serving.config().max_text_chars
        if len(text) > limit:
            st.warning(f"The file has {len(text):,} characters; the first {limit:,} are used.")
            text = text[:limit]
    if not text.strip():
        st.warning("The text is empty: type or upload some text first.")
        st.stop()
    return text


def show_figure(figure, key: str | None = None, trace=None, on_select=None) -> None:
    """A plotly or altair figure at the page's width, with its export menu; ``on_select`` (a callback)
    lets the reader drag a box on a plotly figure, its selection in st.session_state[key]."""
    st.session_state["_figure_count"] = count = st.session_state.get("_figure_count", 0) + 1
    key = key or f"figure-{count}"
    if hasattr(figure, "to_plotly_json"):
        if presenting():  # colours were chosen by the builder (presenting=...); only the font grows here
            figure.update_layout(font=dict(size=20))
        selecting = {"on_select": on_select, "selection_mode": ("box",)} if on_select else {}
        st.plotly_chart(figure, width="stretch", key=key, config={"displaylogo": False}, **selecting)
    else:
        st.altair_chart(figure, width="stretch", key=key)
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


def cached(
    max_entries: int = 8, spinner: str | bool = "Running the model..."
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator for a heavy result of ``func(loaded, *args)`` shared by every session.

    st.cache_resource, not cache_data: no pickling and copying of large arrays at every hit. The
    result's numpy arrays are locked read-only because every session gets the same object. The key
    is the model's name and device plus the other arguments (hashed as cache_data would).
    """

    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        def shared(_loaded: LoadedModel, name: str, device: str, *args: Any) -> T:
            return lock_arrays(func(_loaded, *args))

        # Nested functions with one source share one cache in Streamlit (streamlit#11157): name it.
        shared.__module__, shared.__qualname__ = func.__module__, f"{func.__qualname__}.cached"
        store = st.cache_resource(max_entries=max_entries, show_spinner=spinner)(shared)

        @functools.wraps(func)
        def call(loaded: LoadedModel, *args: Any) -> T:
            return store(loaded, loaded.name, loaded.device, *args)

        call.clear = store.clear  # type: ignore[attr-defined]
        _CACHED[f"{func.__module__}.{func.__qualname__}"] = store
        return call

    return decorate


def clear_cached() -> None:
    """Empty every ui.cached store (the loaded models stay): for tests that swap a data set."""
    for store in _CACHED.values():
        store.clear()


@cached(max_entries=8)
def _cached_trace(loaded: LoadedModel, text: str, record: tuple[str, ...]):
    from txviz.core.tracing import trace_text

    return trace_text(loaded, text, record=record)


def cached_trace(name: str, text: str, record: tuple[str, ...] = ("weights",)):
    """The attention trace of ``text`` under model ``name``, shared by every session."""
    return _cached_trace(_cached_model(name, current_device()), text, tuple(sorted(record)))
