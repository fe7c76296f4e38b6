"""Sub-module inputs and outputs recorded per call: hooks installed once, idle unless asked.

A model shared by every Streamlit session gets its forward hooks once (``install`` is
idempotent). Each hook first reads a ``ContextVar``: with no recorder in the current context, or
one that does not ask for this stage, it returns at once, so a plain forward (``trace_text``,
every other page) pays one ContextVar read per hooked module and nothing else.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch

_active: ContextVar[StageRecorder | None] = ContextVar("txviz_stages", default=None)
_installed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {name: hook handle}
_lock = threading.Lock()


@dataclass(frozen=True)
class StageRecord:
    """What one hooked module saw in one call: its first input and its (first) output, detached."""

    input: torch.Tensor | None
    output: torch.Tensor


@dataclass
class StageRecorder:
    """Collects the stages asked for (by kind: the last part of a point's name) in call order."""

    kinds: frozenset[str]
    records: dict[str, list[StageRecord]] = field(default_factory=dict)

    def last(self, name: str) -> StageRecord | None:
        calls = self.records.get(name)
        return calls[-1] if calls else None


def kind_of(name: str) -> str:
    """'decoder.3.ffn' -> 'ffn'."""
    return name.rsplit(".", 1)[-1]


def _hook_for(name: str):
    kind = kind_of(name)

    def hook(module: torch.nn.Module, args: tuple, output) -> None:
        recorder = _active.get()
        if recorder is None or kind not in recorder.kinds:
            return
        first = args[0].detach() if args and isinstance(args[0], torch.Tensor) else None
        out = output[0] if isinstance(output, tuple) else output
        # references, not copies: every hooked module returns a fresh tensor that nothing edits in place
        recorder.records.setdefault(name, []).append(StageRecord(first, out.detach()))

    return hook


def install(model: torch.nn.Module, points: Mapping[str, torch.nn.Module]) -> None:
    """Hook each named module of ``model`` once; later calls with the same model do nothing."""
    with _lock:
        if model in _installed:
            return
        _installed[model] = {
            name: module.register_forward_hook(_hook_for(name)) for name, module in points.items()
        }


def installed(model: torch.nn.Module) -> tuple[str, ...]:
    """Names of the points hooked on ``model`` (empty when none)."""
    return tuple(_installed.get(model, {}))


def uninstall(model: torch.nn.Module) -> None:
    """Remove the hooks (benchmarks measure a model with and without them)."""
    with _lock:
        for handle in _installed.pop(model, {}).values():
            handle.remove()


@contextmanager
def record_stages(kinds: frozenset[str] | set[str]) -> Iterator[StageRecorder]:
    """Within this block, hooked modules of the asked kinds keep what they compute."""
    recorder = StageRecorder(frozenset(kinds))
    token = _active.set(recorder)
    try:
        yield recorder
    finally:
        _active.reset(token)
