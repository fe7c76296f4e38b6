"""The front door: every forward pass of a model outside core, training and benchmarks goes through ``run``.

    run(model, settings=PLAIN, outputs=(), *, grad=False, part="model", **inputs) -> Run

- ``settings`` (txviz.core.capture.CaptureSettings) says, for this call only, what to record and
  what to change: ``record`` attention items ("weights", "scores", "queries", "keys", "head_out" =
  each head's output before the output projection), ``stages`` of each block ("attn", "cross",
  "ffn", "resid", "embed", "final_norm"), ``normalize`` (softmax, hard, top-k...), ``extra_mask``
  (every layer), ``newest_query_only`` (generation) and ``interventions``.
- ``outputs``: any of "logits", "last_logits" (``run.logits`` is (B, 1, V) at the last position
  only; the model computes no other row where it can), "hidden" (last hidden state),
  "hidden_states" (embeddings and the stream after every block, as transformers gives them),
  "output" (the model's own output object: past_key_values, encoder outputs, ...).
- ``grad=True`` leaves autograd as the caller has it (saliency, attributions); otherwise the pass
  runs under no_grad.
- ``part="encoder"`` runs only the encoder of an encoder-decoder (module names stay the full model's).
- ``**inputs`` go to the model: input_ids, attention_mask, past_key_values, use_cache, ...

``Run`` is frozen: ``attention`` (module name -> records of each call), ``stages`` (point name ->
records), the asked outputs, and one accessor by the model map's names (txviz.core.model_map):
``run["weights", 3]`` (B, H, Q, K) of block 3's self-attention, ``run["head_out", 3, 7]`` (B, T,
D_head) head 7's output before the output projection (recorded as "head_out"), ``run["values", 3]``,
``run["ffn", 3]``, ``run["resid", 3]``, ``run["embed"]``, ``run["final_norm"]``, and with the stack
first when there are two: ``run["weights", "decoder", 3]``; ``run.get(..., cross=True)`` for
cross-attention. ``run.head_output`` and ``run.stage_output`` are the same for patching code.

One device and dtype rule: what the accessor hands out (every attention and stage record) is
float32 on the CPU; the asked outputs (logits, hidden, hidden_states) are float32 on the model's
device, where the caller computes on with them. Interventions (txviz.core.edits), all frozen and
per call: ``Ablate(point, layer, head=..., positions=...)`` zeroes, ``Patch(..., value=t)``
replaces, ``Steer(..., vector=v, strength=s)`` adds, on points "head_out" (one head with ``head=``,
else all), "attn", "cross", "ffn", "resid", "embed"; ``Knockout(edges=[(q, k)], layers=[...],
heads=None)`` cuts attention edges in the chosen layers only. ``step`` is ``run`` for one
generation step with a KV cache, and ``generate`` is the one way to call ``model.generate``.

``run_module(module, *args, **kwargs)`` is the one way to run a piece of a model on its own (the
embedding table, a rotary table, the final norm, the output head, a projection): a partial forward
under the same ContextVar contract, with nothing recorded and nothing changed, under no_grad unless
``grad=True``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Collection, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

import numpy as np
import torch

from txviz.core import layouts
from txviz.core.capture import IMPLEMENTATION, PLAIN, AttentionRecord, CaptureSettings, Recorder, capture
from txviz.core.edits import InterventionError, Point, Reached, Stop
from txviz.core.errors import UserError
from txviz.core.layouts import UnknownLayoutError, cached_layout
from txviz.core.stages import StageRecord

log = logging.getLogger(__name__)

Output = Literal["logits", "last_logits", "hidden", "hidden_states", "output"]
ATTENTION_ITEMS = frozenset({"weights", "scores", "queries", "keys", "values", "head_out"})
STAGE_ITEMS = frozenset({"attn", "cross", "ffn", "resid", "embed", "final_norm"})


class NotRecorded(InterventionError):
    """The run did not record what was asked of it."""


OUTPUTS = frozenset(get_args(Output))
Part = Literal["model", "encoder"]


@dataclass(frozen=True, eq=False)
class Run:
    """What one forward pass recorded and the outputs it was asked for (device and dtype: see the module)."""

    attention: Mapping[str, tuple[AttentionRecord, ...]] = field(default_factory=dict)  # place name ->
    stages: Mapping[str, tuple[StageRecord, ...]] = field(default_factory=dict)  # point name ->
    logits: torch.Tensor | None = None  # (B, T, V) when "logits" was asked
    hidden: torch.Tensor | None = None  # (B, T, D) last hidden state when "hidden" was asked
    hidden_states: tuple[torch.Tensor, ...] | None = None  # when "hidden_states" was asked
    output: Any = None  # the model's own output object when "output" was asked
    model: torch.nn.Module | None = field(default=None, repr=False)  # for layer lookups

    def stack(
        self,
        item: str = "weights",
        call: int = -1,
        names: list[str] | None = None,
        keys: int | None = None,
        row: int = 0,
    ) -> np.ndarray:
        """One numpy array [layer, head, ...] of batch item ``row`` from the given call of each attention module.

        ``keys``: left-pad the key axis with zeros to this many keys; a sliding-window layer's cache
        holds only the last keys, so its rows are shorter than a full layer's.
        """
        names = self.names() if names is None else names
        arrays = [getattr(self.attention[n][call], item)[row].numpy() for n in names]
        if keys is not None:
            arrays = [np.pad(a, [(0, 0)] * (a.ndim - 1) + [(keys - a.shape[-1], 0)]) for a in arrays]
        return np.stack(arrays)

    def names(self, stack: str | None = None, cross: bool = False) -> list[str]:
        """The recorded self-attention (or cross-attention) places of ``stack`` (None: every stack), by
        stack and layer: 'encoder.0.attn', ..., 'decoder.0.attn', ...

        A model the map cannot place keeps its records under module paths, in call order: all are given.
        """
        kind = "cross" if cross else "attn"
        found = []
        for name in self.attention:
            parts = name.split(".")
            if len(parts) == 3 and parts[1].isdigit() and parts[2] == kind and stack in (None, parts[0]):
                found.append((parts[0] != "encoder", int(parts[1]), name))
        if not found and not any(_is_place(name) for name in self.attention):
            return list(self.attention)
        return [name for *_, name in sorted(found)]

    def stage(self, name: str, call: int = -1) -> StageRecord | None:
        """What point ``name`` ('decoder.3.ffn', 'final_norm') saw in the given call, if recorded."""
        calls = self.stages.get(name)
        return calls[call] if calls else None

    def __getitem__(self, key) -> torch.Tensor:
        """``run[item, layer]``, ``run[item, layer, head]``, ``run[item, stack, layer(, head)]``: see ``get``."""
        item, *rest = key if isinstance(key, tuple) else (key,)
        stack = rest.pop(0) if rest and isinstance(rest[0], str) else None
        return self.get(item, *rest, stack=stack)

    def get(
        self,
        item: str,
        layer: int | None = None,
        head: int | None = None,
        *,
        stack: str | None = None,
        cross: bool = False,
        call: int = -1,
    ) -> torch.Tensor:
        """One recorded place, float32 on the CPU: an attention item of block ``layer`` (``head``: that
        head only, the head axis dropped) or a stage point; ``stack``: the one that makes the output."""
        layout = cached_layout(self.model)
        stack = stack or layout.last_stack
        if item in STAGE_ITEMS:
            if head is not None:
                raise ValueError(f"{item!r} is a point of the stream, not of one head.")
            if item not in ("embed", "final_norm") and layer is None:
                raise ValueError(f"Give the layer of {item!r}.")
            try:
                name = layout.point_name(item, stack, layer or 0)
            except UserError as error:  # a point this model does not have: nothing was recorded there
                raise NotRecorded(f"This run did not record {item!r} of layer {layer}: {error}") from error
            record = self.stage(name, call)
            if record is None:
                raise NotRecorded(f"This run did not record {name}: ask for the stage {item!r}.")
            return record.output.float().cpu()
        if item not in ATTENTION_ITEMS:
            raise ValueError(f"Unknown item {item!r}; choose from {sorted(ATTENTION_ITEMS | STAGE_ITEMS)}.")
        if layer is None:
            raise ValueError(f"Give the layer of {item!r}.")
        name = self._attention_name(layout, stack, layer, cross)
        calls = self.attention.get(name)
        value = getattr(calls[call], item) if calls else None
        if value is None:
            raise NotRecorded(f"This run did not record the {item} of {name}: record {item!r}.")
        return value if head is None else value[:, head]

    def _attention_name(self, layout, stack: str, layer: int, cross: bool) -> str:
        try:
            return layout.place(stack, layer, cross)
        except UnknownLayoutError:  # a model read eagerly: its records have their places all the same
            name = f"{stack}.{layer}.{'cross' if cross else 'attn'}"
            if name in self.attention:
                return name
            raise

    def stage_output(self, point: str, layer: int = 0, stack: str | None = None) -> torch.Tensor:
        """(B, T, D) at a stage point of block ``layer`` ("embed": the stream entering block 0)."""
        return self.get(point, layer, stack=stack)

    def head_output(self, layer: int, head: int | None = None, stack: str | None = None, cross: bool = False):
        """(B, T, D_head) of one head before the output projection, or (B, H, T, D_head) of all heads."""
        return self.get("head_out", layer, head, stack=stack, cross=cross)


class NeedsCapture(UserError):
    """What was asked needs txviz's attention function, which this model's attention bypasses."""


def reads_eager(model: torch.nn.Module) -> bool:
    """True for a model whose attention does not run through the capture function (the eager fallback).

    Such a model (Falcon, GPT-J, Bloom, MPNet, DeBERTa-v2 compute attention in their own code) is
    loaded with eager attention; its weights are read from ``output_attentions``.
    """
    return getattr(model.config, "_attn_implementation", IMPLEMENTATION) != IMPLEMENTATION


def _check_eager(model: torch.nn.Module, settings: CaptureSettings) -> None:
    """Refuse, for an eager-fallback model, what only the capture function can do."""
    needs = [
        what
        for what, asked in (
            ("a normaliser other than softmax", settings.normalize is not None),
            ("an extra mask", settings.extra_mask is not None),
            ("interventions", bool(settings.interventions)),
            ("per-step attention rows of generation", settings.newest_query_only and bool(settings.record)),
            (
                f"recording {', '.join(sorted(settings.record - {'weights'}))}",
                bool(settings.record - {"weights"}),
            ),
        )
        if asked
    ]
    if needs:
        raise NeedsCapture(
            f"This {model.config.model_type} model computes attention in its own code, not through "
            "transformers' attention interface, so txviz reads its attention weights from the model's "
            f"own output: it can show them, but not {' or '.join(needs)}. Its attention views (the "
            "Explorer, heads, the residual stream) work."
        )


def _is_place(name: str) -> bool:
    parts = name.split(".")
    return len(parts) == 3 and parts[1].isdigit() and parts[2] in ("attn", "cross")


def _eager_records(model: torch.nn.Module, output, recorder: Recorder) -> None:
    """The weights from ``output_attentions``, recorded under their places as the capture function would."""
    encoder = getattr(output, "encoder_attentions", None)
    if encoder is not None:
        named = [(f"encoder.{i}.attn", a) for i, a in enumerate(encoder)]
        pairs = zip(output.decoder_attentions or (), output.cross_attentions or (), strict=False)
        for i, (own, cross) in enumerate(pairs):
            named += [(f"decoder.{i}.attn", own), (f"decoder.{i}.cross", cross)]
    else:
        stack = "decoder" if model.can_generate() else "encoder"
        named = [(f"{stack}.{i}.attn", a) for i, a in enumerate(getattr(output, "attentions", None) or ())]
    for name, weights in named:
        if weights is not None:
            record = AttentionRecord(weights=weights.detach().float().cpu())
            recorder.records.setdefault(name, []).append(record)


def _freeze(records: dict[str, list]) -> Mapping[str, tuple]:
    return MappingProxyType({name: tuple(calls) for name, calls in records.items()})


def run(
    model: torch.nn.Module,
    settings: CaptureSettings = PLAIN,
    outputs: Collection[Output] = (),
    *,
    grad: bool = False,
    part: Part = "model",
    **inputs,
) -> Run:
    """Run ``model`` once on ``inputs`` under ``settings``, keeping the records and the asked outputs.

    One pass gives the records and the logits or hidden states together, so a caller never runs the
    model a second time for its output.
    """
    unknown = set(outputs) - OUTPUTS
    if unknown:
        raise ValueError(f"Cannot return {sorted(unknown)}; choose from {sorted(OUTPUTS)}.")
    if {"logits", "last_logits"} <= set(outputs):
        raise ValueError("Ask for 'logits' or 'last_logits', not both.")
    if "last_logits" in outputs and accepts(model, "logits_to_keep"):
        inputs.setdefault("logits_to_keep", 1)  # (B, 1, V): a long input's other rows would be large
    if {"hidden", "hidden_states"} & set(outputs):
        inputs.setdefault("output_hidden_states", True)
    forward = model.get_encoder() if part == "encoder" else model
    eager = reads_eager(model)
    if eager:
        _check_eager(model, settings)
        if settings.record:
            inputs["output_attentions"] = True
    with nullcontext() if grad else torch.no_grad(), capture(model, settings, one_pass=True) as recorder:
        output = forward(**inputs)
    if eager and settings.record:
        _eager_records(model, output, recorder)
    return _result(model, recorder, output, outputs)


def run_until(
    model: torch.nn.Module, point: Point, layer: int = 0, stack: str | None = None, **inputs
) -> torch.Tensor:
    """The value at ``point`` of block ``layer``, the forward ended there (the blocks after it never run)."""
    try:
        run(model, CaptureSettings(interventions=(Stop(point, layer, stack=stack),)), **inputs)
    except Reached as found:
        return found.value
    raise InterventionError(f"The forward never reached {point} of block {layer}.")


def _result(model: torch.nn.Module, recorder: Recorder, output, outputs: Collection[str]) -> Run:
    hidden = None  # outputs float32 like the records: a reduced-precision model's too
    if "hidden" in outputs:
        hidden = getattr(output, "last_hidden_state", None)
        if hidden is None and getattr(output, "hidden_states", None):
            hidden = output.hidden_states[-1]
        if hidden is None:
            raise ValueError("This model returns no last hidden state.")
    return Run(
        attention=_freeze(recorder.records),
        stages=_freeze(recorder.stages),
        logits=_logits(output, outputs),
        hidden=None if hidden is None else hidden.float(),
        hidden_states=tuple(h.float() for h in output.hidden_states) if "hidden_states" in outputs else None,
        output=output if "output" in outputs else None,
        model=model,
    )


def run_module(module: torch.nn.Module, *args, grad: bool = False, **kwargs) -> Any:
    """``module(*args, **kwargs)``: a part of a model run alone (embeddings, rotary, final norm, head).

    It runs under the plain settings of its own capture, so a caller's capture in progress on this
    thread neither records nor edits it; what it returns is the module's own output.
    """
    with nullcontext() if grad else torch.no_grad(), capture(module, PLAIN):
        return module(*args, **kwargs)


def _logits(output, outputs: Collection[str]) -> torch.Tensor | None:
    if "last_logits" in outputs:
        return output.logits[:, -1:].float()  # already one row where the model took logits_to_keep
    return output.logits.float() if "logits" in outputs else None


def accepts(model: torch.nn.Module, argument: str) -> bool:
    """Whether the model's forward takes ``argument`` (``logits_to_keep`` is not in every family)."""
    return argument in inspect.signature(model.forward).parameters


def step(
    model: torch.nn.Module,
    settings: CaptureSettings = PLAIN,
    outputs: Collection[Output] = ("logits", "output"),
    **inputs,
) -> Run:
    """One step of generation with a KV cache: ``run`` with use_cache, returning logits and the output.

    ``inputs`` carry past_key_values (a transformers cache, filled in place) and the step's input_ids.
    """
    inputs.setdefault("use_cache", True)
    return run(model, settings, outputs, **inputs)


def generate(model: torch.nn.Module, settings: CaptureSettings = PLAIN, **kwargs) -> torch.Tensor:
    """``model.generate(**kwargs)`` under ``settings`` and no_grad: the one place generate is called."""
    if reads_eager(model):
        _check_eager(model, settings)
    with torch.no_grad(), capture(model, settings):
        return model.generate(**kwargs)


def probe(model: torch.nn.Module, **inputs) -> Run:
    """A forward recording weights keyed by module path ("model.layers.3.self_attn"), not by place: the
    load's self-check and discovery, which finds the places, read it."""
    with (
        torch.no_grad(),
        capture(model, CaptureSettings(record={"weights"}), one_pass=True, places=False) as rec,
    ):
        output = model(**inputs)
    return _result(model, rec, output, ("output",))


def _probe_attention(model: torch.nn.Module) -> tuple[list[str] | None, str]:
    """The modules that call the attention function in a short forward (three tokens, or a blank image)."""
    if reads_eager(model):
        return None, "it computes attention in its own code, not through transformers' attention interface."
    try:
        return list(probe(model, **layouts.probe_inputs(model)).attention), ""
    except Exception as error:  # noqa: BLE001 - a model that cannot run a short probe is refused by name
        # The user sees only the error's type: the traceback is for whoever looks into the refusal.
        log.warning("the attention probe of a %s failed", type(model).__name__, exc_info=True)
        return None, f"a short probe forward failed ({type(error).__name__})."


layouts.set_probe(_probe_attention)
