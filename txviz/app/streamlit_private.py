"""The one module of txviz that reads Streamlit's private internals, checked once per process against the
installed Streamlit, with a public fallback for each.

Streamlit 1.67 has no public way to do these, so they remain (each names the upstream request it stands in
for at the code):

- push (``txviz.app.lecture.push``): rerun one fragment of another session, on that session's event loop, with its
  browser's last request (``Runtime.get_app_session``, ``AppSession.request_rerun``,
  ``_call_soon_on_event_loop``, ``_client_state``), and know which fragment is running now
  (``ThreadState.fragment_id``). Fallback: followers learn of a step by their ``st.fragment`` poll.
- the fragment guard (``txviz.app.fragment_pages``): wrap ``ScriptRunner._run_script`` so a fragment
  rerun asked for with a page the session has left runs on the page it is on. Fallback: no wrapping.
- the queue guard (``txviz.app.fragment_pages``): wrap ``ForwardMsgQueue.clear`` so a fragment run that
  starts before the full run ahead of it reached the browser keeps that run's messages. Fallback: none.
- the wire protocol (``streamlit.proto``) that headless sessions (``txviz.app.lecture.headless``) speak over the
  app's websocket, for the room's warm-up. Fallback: no warm-up; the step's first visitor computes it.

``check()`` (called once from app.py, and by everything here) imports each of them and looks for every
attribute, parameter and proto field txviz reads. If one is missing it logs ONE warning and every caller
takes its fallback, so a Streamlit upgrade that renames something costs the room its push, guard and
warm-up, never a page run. ``TXVIZ_STREAMLIT_PRIVATE=off`` forces the fallbacks. A private call that still
fails at run time logs one warning and turns the adapter off for the process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import logging
import os
import threading
import types
from collections.abc import Callable

log = logging.getLogger(__name__)

SWITCH = "TXVIZ_STREAMLIT_PRIVATE"  # "off" (or 0, false, no): the public path only
OFF = ("off", "0", "false", "no")
ONE_SHOT = ("trigger_value", "string_trigger_value", "json_trigger_value", "chat_input_value")

# Everything txviz reads, by module and dotted name; for a callable, the parameters it is passed (for a
# dataclass, the fields read), None for a plain attribute.
NEEDED: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("streamlit.runtime.scriptrunner", "get_script_run_ctx", ("suppress_warning",)),
    ("streamlit.runtime.scriptrunner_utils.script_run_context", "ScriptRunContext", ("session_id", "query_string")),
    ("streamlit.runtime.scriptrunner_utils.script_run_context", "ScriptRunContext.page_script_hash", None),
    ("streamlit.runtime.scriptrunner_utils.script_run_context", "ThreadState.get", ()),
    ("streamlit.runtime.scriptrunner_utils.script_run_context", "FragmentThreadState", ("fragment_id",)),
    ("streamlit.runtime", "Runtime.exists", ()),
    ("streamlit.runtime", "Runtime.instance", ()),
    ("streamlit.runtime", "Runtime.get_app_session", ("session_id",)),
    ("streamlit.runtime.app_session", "AppSession.request_rerun", ("client_state",)),
    ("streamlit.runtime.app_session", "AppSession._call_soon_on_event_loop", ("callback",)),
    ("streamlit.runtime.scriptrunner.script_runner", "ScriptRunner._run_script", ("rerun_data",)),
    ("streamlit.runtime.scriptrunner_utils.script_requests", "RerunData",
     ("fragment_id_queue", "page_script_hash", "page_name", "query_string")),
    ("streamlit.proto.ForwardMsg_pb2", "ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY", None),
    ("streamlit.runtime.forward_msg_queue", "ForwardMsgQueue.clear",
     ("retain_lifecycle_msgs", "fragment_ids_this_run")),
)  # fmt: skip
SET_IN_INIT = (  # instance attributes
    ("streamlit.runtime.app_session", "AppSession", "_client_state"),
    ("streamlit.runtime.forward_msg_queue", "ForwardMsgQueue", "_queue"),
)
# Proto messages: the fields txviz reads or writes (dotted through sub-messages) and the one-ofs it asks.
PROTO_FIELDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("streamlit.proto.ClientState_pb2", "ClientState",
     ("fragment_id", "page_script_hash", "page_name", "query_string", "is_auto_rerun", "context_info.url",
      "widget_states.widgets")),
    ("streamlit.proto.BackMsg_pb2", "BackMsg", ("rerun_script.fragment_id", "rerun_script.widget_states")),
    ("streamlit.proto.WidgetStates_pb2", "WidgetState", ("id", "trigger_value", "string_value")),
    ("streamlit.proto.ForwardMsg_pb2", "ForwardMsg",
     ("new_session.page_script_hash", "navigation.page_script_hash", "page_info_changed.query_string",
      "auto_rerun.fragment_id", "auto_rerun.interval", "stop_auto_rerun.fragment_ids", "script_finished",
      "delta.fragment_id", "delta.new_element.markdown.body", "delta.new_element.radio.id",
      "delta.new_element.radio.label", "delta.new_element.radio.options", "delta.new_element.button.id",
      "delta.new_element.button.label", "delta.new_element.exception.message", "delta.new_element.alert.body",
      "delta.new_element.html.body", "metadata.delta_path", "metadata.run.fragment_ids")),
)  # fmt: skip
PROTO_ONEOFS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("streamlit.proto.ForwardMsg_pb2", "ForwardMsg", "type",
     ("new_session", "navigation", "page_info_changed", "auto_rerun", "stop_auto_rerun", "delta",
      "script_finished")),
    ("streamlit.proto.Delta_pb2", "Delta", "type", ("new_element", "add_block")),
    ("streamlit.proto.Element_pb2", "Element", "type",
     ("markdown", "alert", "html", "radio", "button", "exception")),
    ("streamlit.proto.WidgetStates_pb2", "WidgetState", "value", ("trigger_value", "string_value")),
)  # fmt: skip

_LOCK = threading.Lock()
_STATE: dict[str, bool] = {}  # "ok": the verdict, once checked
_WRAPPED = "_txviz_wrapped"


def check() -> bool:
    """Whether txviz may use Streamlit's internals in this process: decided once (the switch, then every
    name, parameter and proto field it reads); one warning when it may not."""
    ok = _STATE.get("ok")
    if ok is not None:
        return ok
    with _LOCK:
        if "ok" not in _STATE:
            _STATE["ok"] = _decide()
        return _STATE["ok"]


enabled = check  # what callers ask on each use: the cached verdict


def _decide() -> bool:
    if os.environ.get(SWITCH, "").strip().lower() in OFF:
        log.warning("%s is off: no push, no fragment guard, no warm-up; followers learn of a step by their "
                    "poll", SWITCH)  # fmt: skip
        return False
    missing = missing_internals()
    if missing:
        log.warning("Streamlit %s lacks what txviz reads of its internals (%s): falling back to the public "
                    "path (followers learn of a step by their poll; no fragment guard, no warm-up)",
                    _version(), "; ".join(missing))  # fmt: skip
    return not missing


def _version() -> str:
    import streamlit

    return getattr(streamlit, "__version__", "?")


def missing_internals() -> list[str]:
    """What this Streamlit lacks of NEEDED, SET_IN_INIT, PROTO_FIELDS and PROTO_ONEOFS, in words."""
    missing = []
    for module, name, parameters in NEEDED:
        try:
            found = _resolve(module, name)
        except Exception as error:  # an ImportError, or whatever a changed module raises on import
            log.debug("%s.%s cannot be resolved", module, name, exc_info=True)  # check() warns of the list
            missing.append(f"{module}.{name} ({type(error).__name__}: {error})")
            continue
        lacking = [p for p in parameters or () if p not in _parameters(found)]
        if lacking:
            missing.append(f"{module}.{name} takes no {', '.join(lacking)}")
    for module, name, attribute in SET_IN_INIT:
        try:
            init = _resolve(module, name).__init__
            present = attribute in init.__code__.co_names  # assigned as self.<attribute> in __init__
        except Exception as error:
            log.debug("%s.%s.__init__ cannot be read", module, name, exc_info=True)
            missing.append(f"{module}.{name} ({type(error).__name__}: {error})")
            continue
        if not present:
            missing.append(f"{module}.{name}.{attribute}")
    for module, name, fields in PROTO_FIELDS:
        missing.extend(f"{name}.{field}" for field in fields if not _has_field(module, name, field))
    for module, name, oneof, fields in PROTO_ONEOFS:
        missing.extend(
            f"{name}.{oneof}: {field}" for field in fields if not _in_oneof(module, name, oneof, field)
        )
    return missing


def _resolve(module: str, dotted: str):
    found = importlib.import_module(module)
    for part in dotted.split("."):
        found = getattr(found, part)
    return found


def _parameters(found) -> set[str]:
    """The names a callable takes, and a dataclass's fields."""
    names = {f.name for f in dataclasses.fields(found)} if dataclasses.is_dataclass(found) else set()
    with contextlib.suppress(TypeError, ValueError):  # a builtin without a signature: its fields count
        names |= set(inspect.signature(found).parameters)
    return names


def _has_field(module: str, message: str, dotted: str) -> bool:
    try:
        descriptor = _resolve(module, message).DESCRIPTOR
    except Exception:  # the message is gone: reported as its fields missing
        log.debug("proto message %s.%s cannot be resolved", module, message, exc_info=True)
        return False
    for part in dotted.split("."):
        field = descriptor.fields_by_name.get(part) if descriptor is not None else None
        if field is None:
            return False
        descriptor = field.message_type
    return True


def _in_oneof(module: str, message: str, oneof: str, field: str) -> bool:
    try:
        group = _resolve(module, message).DESCRIPTOR.oneofs_by_name[oneof]
    except Exception:  # the message or its one-of is gone
        log.debug("one-of %s of %s.%s cannot be resolved", oneof, module, message, exc_info=True)
        return False
    return field in {f.name for f in group.fields}


def give_up(what: str) -> None:
    """A private call failed at run time although the check passed: one warning, then the public path for
    the rest of the process."""
    with _LOCK:
        was = _STATE.get("ok")
        _STATE["ok"] = False
    if was:
        log.warning("Streamlit internal failed (%s): falling back to the public path", what, exc_info=True)
        _unwrap_script_runs()


# --- push: which fragment runs here, and a fragment rerun in another session --------------------------


def this_session() -> str | None:
    """The id of the session whose script runs in this thread (None outside one, or when disabled)."""
    if not enabled():
        return None
    # Only a push needs the id, to find the session again (streamlit/streamlit#2838); st.context has none.
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx(suppress_warning=True)
        return ctx.session_id if ctx else None
    except Exception:
        give_up("reading this thread's session")
        return None


def running_fragment() -> tuple[str, str, str, str] | None:
    """(session id, fragment id, page hash, query string) of the fragment running now in this thread; None
    outside a fragment of a live session, or when disabled."""
    if not enabled():
        return None
    # No public API names the running fragment or its session: a fragment's key (st.fragment(key=...))
    # reruns it only from its own session's callbacks (streamlit/streamlit#10603, #12799).
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

        ctx = get_script_run_ctx(suppress_warning=True)
        if ctx is None:
            return None
        fragment_id = ThreadState.get().fragment_id
        if not fragment_id:
            return None
        return ctx.session_id, fragment_id, ctx.page_script_hash or "", ctx.query_string or ""
    except Exception:
        give_up("reading the running fragment")
        return None


def rerun_fragment(
    session_id: str, fragment_id: str, page_script_hash: str, query_string: str
) -> bool | None:
    """Ask a live session to rerun one fragment, as its browser's timer would. True: asked; False: the
    session is gone; None: disabled, or no server runs here. Other failures raise (the caller knows the room)."""
    if not enabled():
        return None
    # A session reruns only from its own script (streamlit/streamlit#2838, "Trigger a script re-run from
    # another thread", open): so this does what Streamlit's run-on-save does, on the session's event loop.
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    session = Runtime.instance().get_app_session(session_id)
    if session is None:
        return False
    state = ClientState(
        fragment_id=fragment_id,
        page_script_hash=page_script_hash,
        query_string=query_string,
        is_auto_rerun=True,  # a fragment gone by then (the page switched) is dropped quietly
    )
    last = session._client_state  # the browser's last request: its context (st.context.url) and widgets
    if last.HasField("context_info"):
        state.context_info.CopyFrom(last.context_info)
    # The widgets' last values, so a push that coalesces with a run the browser has just asked for keeps
    # what the student chose; one-shot triggers (a click) are left out, or it would fire again.
    state.widget_states.widgets.extend(
        w for w in last.widget_states.widgets if w.WhichOneof("value") not in ONE_SHOT
    )
    session._call_soon_on_event_loop(functools.partial(session.request_rerun, state))
    return True


# --- the fragment guard: every script run passes through a rule --------------------------------------


def wrap_script_runs(rule: Callable[[object, str, str], object]) -> bool:
    """Once per process, pass every script run's RerunData through ``rule(rerun_data, page hash, query
    string of the session's last run)`` before Streamlit runs it. False (nothing wrapped) when disabled."""
    if not enabled():
        return False
    # No public hook sees a run's request. Upstream fixed stale auto-reruns of nested fragments
    # (streamlit/streamlit#15084, PRs #15130 and #15932) but not one naming a page the session has left:
    # Streamlit then announces the old page and the browser cannot place the fragment's deltas.
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
        from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    except Exception:
        give_up("importing ScriptRunner")
        return False

    def wrapping(run):
        @functools.wraps(run)
        def run_through_rule(self, rerun_data):
            try:
                ctx = get_script_run_ctx(suppress_warning=True)  # the script thread's: its last run's page
                if ctx is not None:
                    rerun_data = rule(rerun_data, ctx.page_script_hash, ctx.query_string)
            except Exception:  # never fail a run for the guard: run as asked, and stop guarding
                give_up("the fragment guard")
            return run(self, rerun_data)

        return run_through_rule

    _wrap_once(ScriptRunner, "_run_script", wrapping)
    return True


def _wrap_once(owner: type, name: str, wrapping: Callable) -> None:
    """Replace ``owner.name`` by ``wrapping(it)``, once per process (a second call finds it wrapped)."""
    with _LOCK:
        found = getattr(owner, name)
        if not getattr(found, _WRAPPED, False):
            wrapped = wrapping(found)
            setattr(wrapped, _WRAPPED, True)
            setattr(owner, name, wrapped)


def wrap_fragment_clears(keep_every_delta: Callable[[list], bool]) -> bool:
    """Once per process, let ``keep_every_delta(queued messages)`` decide that a fragment run starting now
    drops none of the deltas still queued for the browser. False (nothing wrapped) when disabled."""
    if not enabled():
        return False
    # A fragment run drops its fragment's queued deltas (streamlit/streamlit#9381), also those a full run
    # just wrote and has not sent: the browser then gets the full run's next element at a place after a
    # gap ("Bad delta path index 2 (should be between [0, 1])") and stops. Seen on busy servers, where
    # the 5 ms flush lags; no upstream issue names it yet.
    try:
        from streamlit.runtime.forward_msg_queue import ForwardMsgQueue
    except Exception:
        give_up("importing ForwardMsgQueue")
        return False

    def wrapping(clear):
        @functools.wraps(clear)
        def clear_keeping_unsent_runs(self, retain_lifecycle_msgs=False, fragment_ids_this_run=None):
            try:
                if fragment_ids_this_run and retain_lifecycle_msgs and keep_every_delta(self._queue):
                    fragment_ids_this_run = []  # a fragment run still, keeping every delta
            except Exception:  # never fail a run for the guard
                give_up("the queue guard")
            return clear(self, retain_lifecycle_msgs, fragment_ids_this_run)

        return clear_keeping_unsent_runs

    _wrap_once(ForwardMsgQueue, "clear", wrapping)
    return True


def _unwrap_script_runs() -> None:
    try:
        from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    except Exception:  # nothing was wrapped where it cannot be imported
        log.debug("ScriptRunner cannot be imported: nothing to unwrap", exc_info=True)
        return
    run = ScriptRunner._run_script
    if getattr(run, _WRAPPED, False):
        ScriptRunner._run_script = run.__wrapped__
    with contextlib.suppress(ImportError):  # nothing was wrapped where it cannot be imported
        from streamlit.runtime.forward_msg_queue import ForwardMsgQueue

        clear = ForwardMsgQueue.clear
        if getattr(clear, _WRAPPED, False):
            ForwardMsgQueue.clear = clear.__wrapped__


# --- the wire protocol, for headless sessions --------------------------------------------------------


@functools.cache
def wire() -> types.SimpleNamespace:
    """The proto messages a headless session sends and reads (BackMsg, ForwardMsg, WidgetState)."""
    # Streamlit has no client for a live server: AppTest replaces the runtime, and its own load tests drive
    # Chromium (streamlit/streamlit PR #14470), so the frontend's messages are the one way in without a
    # browser. Not gated by the switch: a client in another process (tests, the lecture benchmark) may
    # speak to any server; the warm-up asks enabled() first.
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    return types.SimpleNamespace(BackMsg=BackMsg, ForwardMsg=ForwardMsg, WidgetState=WidgetState)
