"""The front door: every forward pass of a model outside core, training and benchmarks goes through ``run``.

    run(model, settings=PLAIN, outputs=(), *, grad=False, part="model", **inputs) -> Run

- ``settings`` (txviz.core.capture.CaptureSettings) says, for this call only, what to record and
  what to change: ``record`` attention items ("weights", "scores", "queries", "keys", "heads" =
  each head's output before the output projection), ``stages`` of each block ("attn", "cross",
  "ffn", "resid", "embed", "final_norm"), ``normalize`` (softmax, hard, top-k...), ``extra_mask``
  (every layer), ``newest_query_only`` (generation) and ``interventions``.
- ``outputs``: any of "logits", "hidden" (last hidden state), "hidden_states" (embeddings and the
  stream after every block, as transformers gives them), "output" (the model's own output object:
  past_key_values, encoder outputs, ...).
- ``grad=True`` leaves autograd as the caller has it (saliency, attributions); otherwise the pass
  runs under no_grad.
- ``part="encoder"`` runs only the encoder of an encoder-decoder (module names stay the full model's).
- ``**inputs`` go to the model: input_ids, attention_mask, past_key_values, use_cache, ...

``Run`` is frozen: ``attention`` (module name -> records of each call), ``stages`` (point name ->
records), the asked outputs, and helpers that give what patching needs from a clean run:
``run.head_output(layer, head)``, ``run.stage_output("ffn", layer)``, ``run.stage_output("resid",
layer)``, ``run.stage_output("embed")``. Interventions (txviz.core.interventions), all frozen and
per call: ``Ablate(point, layer, head=..., positions=...)`` zeroes, ``Patch(..., value=t)``
replaces, ``Steer(..., vector=v, strength=s)`` adds, on points "head", "attn", "cross", "ffn",
"resid", "embed"; ``Knockout(edges=[(q, k)], layers=[...], heads=None)`` cuts attention edges in
the chosen layers only. ``step`` is ``run`` for one generation step with a KV cache, and
``generate`` is the one way to call ``model.generate``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

import numpy as np
import torch

from txviz.core.capture import PLAIN, AttentionRecord, CaptureSettings, Recorder, capture
from txviz.core.interventions import InterventionError
from txviz.core.layouts import cached_layout
from txviz.core.stages import StageRecord

Output = Literal["logits", "hidden", "hidden_states", "output"]
OUTPUTS = frozenset(get_args(Output))
Part = Literal["model", "encoder"]


@dataclass(frozen=True, eq=False)
class Run:
    """What one forward pass recorded and the outputs it was asked for (tensors as the model gave them)."""

    attention: Mapping[str, tuple[AttentionRecord, ...]] = field(default_factory=dict)  # module name ->
    stages: Mapping[str, tuple[StageRecord, ...]] = field(default_factory=dict)  # point name ->
    logits: torch.Tensor | None = None  # (B, T, V) when "logits" was asked
    hidden: torch.Tensor | None = None  # (B, T, D) last hidden state when "hidden" was asked
    hidden_states: tuple[torch.Tensor, ...] | None = None  # when "hidden_states" was asked
    output: Any = None  # the model's own output object when "output" was asked
    model: torch.nn.Module | None = field(default=None, repr=False)  # for layer lookups

    def stack(self, item: str = "weights", call: int = -1, names: list[str] | None = None) -> np.ndarray:
        """One numpy array [layer, head, ...] of batch item 0 from the given call of each attention module."""
        names = list(self.attention) if names is None else names
        return np.stack([getattr(self.attention[n][call], item)[0].numpy() for n in names])

    def stage(self, name: str, call: int = -1) -> StageRecord | None:
        """What point ``name`` ('decoder.3.ffn', 'final_norm') saw in the given call, if recorded."""
        calls = self.stages.get(name)
        return calls[call] if calls else None

    def stage_output(self, point: str, layer: int = 0, stack: str | None = None) -> torch.Tensor:
        """(B, T, D) at a stage point of block ``layer`` ("embed": the stream entering block 0)."""
        stack = stack or cached_layout(self.model).last_stack
        name = f"{stack}.embed" if point == "embed" else f"{stack}.{layer}.{point}"
        record = self.stage(name)
        if record is None:
            raise InterventionError(f"This run did not record {name}: ask for the stage {point!r}.")
        return record.output

    def head_output(self, layer: int, head: int | None = None, stack: str | None = None, cross: bool = False):
        """(B, T, D_head) of one head before the output projection, or (B, H, T, D_head) of all heads."""
        layout = cached_layout(self.model)
        name = layout.attention_name(stack or layout.last_stack, layer, cross)
        calls = self.attention.get(name)
        if not calls or calls[-1].heads is None:
            raise InterventionError(f"This run did not record the heads of {name}: record 'heads'.")
        heads = calls[-1].heads
        return heads if head is None else heads[:, head]


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
    if {"hidden", "hidden_states"} & set(outputs):
        inputs.setdefault("output_hidden_states", True)
    forward = model.get_encoder() if part == "encoder" else model
    with nullcontext() if grad else torch.no_grad(), capture(model, settings) as recorder:
        output = forward(**inputs)
    return _result(model, recorder, output, outputs)


def _result(model: torch.nn.Module, recorder: Recorder, output, outputs: Collection[str]) -> Run:
    hidden = None
    if "hidden" in outputs:
        hidden = getattr(output, "last_hidden_state", None)
        if hidden is None and getattr(output, "hidden_states", None):
            hidden = output.hidden_states[-1]
        if hidden is None:
            raise ValueError("This model returns no last hidden state.")
    return Run(
        attention=_freeze(recorder.records),
        stages=_freeze(recorder.stages),
        logits=output.logits if "logits" in outputs else None,
        hidden=hidden,
        hidden_states=tuple(output.hidden_states) if "hidden_states" in outputs else None,
        output=output if "output" in outputs else None,
        model=model,
    )


def step(model: torch.nn.Module, settings: CaptureSettings = PLAIN, **inputs) -> Run:
    """One step of generation with a KV cache: ``run`` with use_cache, returning logits and the output.

    ``inputs`` carry past_key_values (a transformers cache, filled in place) and the step's input_ids.
    """
    inputs.setdefault("use_cache", True)
    return run(model, settings, ("logits", "output"), **inputs)


def generate(model: torch.nn.Module, settings: CaptureSettings = PLAIN, **kwargs) -> torch.Tensor:
    """``model.generate(**kwargs)`` under ``settings`` and no_grad: the one place generate is called."""
    with torch.no_grad(), capture(model, settings):
        return model.generate(**kwargs)
