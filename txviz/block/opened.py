"""One block opened: its code run on the chosen layer's real weights, checked against the model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.block import postln, prenorm
from txviz.block.ops import Step, rotary_angles
from txviz.block.recording import BlockRun
from txviz.block.weights import block_weights
from txviz.models import LoadedModel

FORM_NOTES = {
    "post-LN": "This is the textbook's block (Vaswani et al. 2017): each sub-block's output is added to the "
    "stream and the sum is normalised (post-LN). Every block renormalises the whole stream, so its norm stays "
    "approximately constant from layer to layer, about √d times the LayerNorm gain's scale, not exactly: "
    "the gains and biases differ per feature and per layer.",
    "pre-norm": "This model uses the pre-norm block: the norm sits on the branch (X + MHA(Norm(X))), not on "
    "the stream. The residual stream is a running sum that no norm rescales, so the Jacobian of a late "
    "layer's stream with respect to an early one is the identity plus the branches' terms: the identity "
    "path gives gradients a direct route to early layers (the other terms add to it). GPT-2 (Radford et "
    "al. 2019) moved LayerNorm to the input of each sub-block, and Llama kept it there; Xiong et al. (2020) "
    "analysed why pre-LN trains stably without learning-rate warm-up. The stream grows with depth, so a "
    "final norm comes before the output head.",
}


@dataclass(frozen=True, eq=False)
class OpenedBlock:
    """The steps of one block and how far its output E is from the model's own layer output."""

    stack: str
    layer: int
    form: str  # "post-LN" or "pre-norm"
    lines: tuple[str, ...]  # the block's pseudo-code: two lines, three for a decoder's cross-attention
    steps: tuple[Step, ...]
    max_difference: float  # max |E - model's output of this layer|
    scale: float  # max |model's output|, to read the difference against
    note: str = ""  # what this family's block adds to the plain form (norms, q/k norms, soft-capping...)

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)


def _rotary(model, layout, n_tokens: int, layer: int):
    """The model's own (cos, sin) for positions 0..T-1 in block ``layer``."""
    return rotary_angles(layout.position_table(model, "rotary"), model.config, n_tokens, layer, model.device)


@torch.no_grad()
def open_block(loaded: LoadedModel, run: BlockRun, stack: str, layer: int) -> OpenedBlock:
    """Run block ``layer`` of ``stack`` as code on X = the model's stream entering that block."""
    layout, model = run.layout, loaded.model
    stream = run.stack(stack)
    weights = block_weights(layout, model, stack, layer)
    x = torch.tensor(stream.hidden[layer], device=model.device)
    if weights.form == "post-LN":
        memory = None
        if weights.cross is not None:
            memory = torch.tensor(run.stack("encoder").hidden[-1], device=model.device)
        e, steps = postln.post_ln_block(x, weights, memory)
        lines = postln.LINES if memory is None else postln.DECODER_LINES
    else:
        rotary = _rotary(model, layout, x.shape[0], layer) if weights.attention.rotary else None
        e, steps = prenorm.pre_norm_block(x, weights, rotary)
        lines = prenorm.lines(weights)
    note = "" if weights.form == "post-LN" else prenorm.variant_note(weights)
    expected = stream.hidden[layer + 1]
    difference = float(np.abs(e.float().cpu().numpy() - expected).max())
    return OpenedBlock(
        stack, layer, weights.form, lines, tuple(steps.items), difference, float(np.abs(expected).max()), note
    )
