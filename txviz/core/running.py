"""The one way to run a model: a forward pass under CaptureSettings, its records and its outputs."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import torch

from txviz.core.capture import CaptureSettings, Recorder, capture

OUTPUTS = frozenset({"logits", "hidden"})
PLAIN = CaptureSettings()  # nothing recorded, softmax: the fast path


@dataclass(frozen=True, eq=False)
class Run:
    """What one forward pass recorded and, when asked, what it output (tensors as the model gave them)."""

    recorder: Recorder
    logits: torch.Tensor | None = None  # (B, T, V) when "logits" was asked
    hidden: torch.Tensor | None = None  # (B, T, D) last hidden state when "hidden" was asked
    output: object = None  # the model's own output object (e.g. past_key_values), always kept


def run(
    model: torch.nn.Module,
    settings: CaptureSettings = PLAIN,
    outputs: Collection[str] = (),
    **inputs,
) -> Run:
    """Run ``model`` once on ``inputs`` under ``settings``, with no gradients, keeping what is asked.

    One pass gives the attention records and the logits or hidden states together, so a caller
    never runs the model a second time for its output.
    """
    unknown = set(outputs) - OUTPUTS
    if unknown:
        raise ValueError(f"Cannot return {sorted(unknown)}; choose from {sorted(OUTPUTS)}.")
    with torch.no_grad(), capture(model, settings) as recorder:
        output = model(**inputs)
    hidden = None
    if "hidden" in outputs:
        hidden = getattr(output, "last_hidden_state", None)
        if hidden is None and getattr(output, "hidden_states", None):  # output_hidden_states=True
            hidden = output.hidden_states[-1]
        if hidden is None:
            raise ValueError("This model returns no last hidden state: pass output_hidden_states=True.")
    logits = output.logits if "logits" in outputs else None
    return Run(recorder, logits, hidden, output)
