"""Sub-module points of a block, recorded and changed per call: hooks installed once, idle unless asked.

A model shared by every Streamlit session gets its forward hooks once (``install`` is idempotent).
Each hook reads the capture ``ContextVar`` (txviz.core.capture) it was installed with: with no
recorder in the current context, or one that neither records this point's kind nor changes this
point, it returns at once, so a plain forward pays one ContextVar read per hooked module.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

import torch

from txviz.core.edits import edit_stream

_installed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {name: hook handle}
_lock = threading.Lock()


@dataclass(frozen=True)
class StageRecord:
    """What one hooked point saw in one call: its first input and its (first) output, detached."""

    input: torch.Tensor | None
    output: torch.Tensor


def kind_of(name: str) -> str:
    """'decoder.3.ffn' -> 'ffn'; 'decoder.embed' -> 'embed'."""
    return name.rsplit(".", 1)[-1]


def _active_work(active: ContextVar, name: str, kind: str):
    """(recorder, edits, record?) for this point in the current call, or None when it has nothing to do."""
    recorder = active.get()
    if recorder is None:
        return None
    edits = recorder.plan.streams.get(name)
    record = kind in recorder.settings.stages
    if not edits and not record:
        return None
    return recorder, edits, record


def _hook_for(name: str, active: ContextVar):
    """A forward hook: record the module's output (and first input) and apply the point's edits."""
    kind = kind_of(name)

    def hook(module: torch.nn.Module, args: tuple, output):
        work = _active_work(active, name, kind)
        if work is None:
            return None
        recorder, edits, record = work
        out = output[0] if isinstance(output, tuple) else output
        if edits:
            out = edit_stream(out, edits)
        if record:
            first = args[0].detach() if args and isinstance(args[0], torch.Tensor) else None
            # references, not copies: every hooked module returns a fresh tensor that nothing edits in place
            recorder.stages.setdefault(name, []).append(StageRecord(first, out.detach()))
        if not edits:
            return None
        return (out, *output[1:]) if isinstance(output, tuple) else out

    return hook


def _embed_hook_for(name: str, active: ContextVar):
    """A forward pre-hook on a stack's first block: record and edit the stream entering it."""

    def hook(module: torch.nn.Module, args: tuple, kwargs: dict):
        work = _active_work(active, name, "embed")
        if work is None:
            return None
        recorder, edits, record = work
        positional = bool(args) and isinstance(args[0], torch.Tensor)
        stream = args[0] if positional else kwargs["hidden_states"]
        if edits:
            stream = edit_stream(stream, edits)
        if record:
            recorder.stages.setdefault(name, []).append(StageRecord(None, stream.detach()))
        if not edits:
            return None
        if positional:
            return (stream, *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": stream}

    return hook


def install(model: torch.nn.Module, points: Mapping[str, torch.nn.Module], active: ContextVar) -> None:
    """Hook each named point of ``model`` once, reading ``active``; later calls with the same model do nothing.

    The hooks run before any other (prepend): transformers' own hidden-state hooks then see the
    edited stream, as the next block does.
    """
    with _lock:
        if model in _installed:
            return
        handles = {}
        for name, module in points.items():
            if kind_of(name) == "embed":
                handles[name] = module.register_forward_pre_hook(
                    _embed_hook_for(name, active), with_kwargs=True, prepend=True
                )
            else:
                handles[name] = module.register_forward_hook(_hook_for(name, active), prepend=True)
        _installed[model] = handles


def installed(model: torch.nn.Module) -> tuple[str, ...]:
    """Names of the points hooked on ``model`` (empty when none)."""
    return tuple(_installed.get(model, {}))


def uninstall(model: torch.nn.Module) -> None:
    """Remove the hooks (benchmarks measure a model with and without them)."""
    with _lock:
        for handle in _installed.pop(model, {}).values():
            handle.remove()
