"""The data flow of one forward pass as stages a lecturer can point at, each with its numbers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.block.ops import rotary_angles
from txviz.block.recording import BlockRun
from txviz.core.running import run_module
from txviz.core.tokens import readable_tokens
from txviz.models import LoadedModel


@dataclass(frozen=True)
class Stage:
    """One box of the diagram."""

    key: str
    label: str  # short, in the box
    detail: str  # a sentence under the figure


@dataclass(frozen=True, eq=False)
class StageValues:
    """A stage's numbers for the current text: a (token, feature) matrix, or per-token outputs."""

    title: str
    matrix: np.ndarray | None = None  # (T, D)
    top_tokens: tuple[str, ...] = ()  # decoders' output: the predicted next token per position
    top_probs: np.ndarray | None = None
    ids: tuple[int, ...] = ()


def stages(run: BlockRun, stack: str) -> tuple[Stage, ...]:
    """The boxes for one stack, in order, as this model computes them."""
    n = run.stack(stack).n_layers
    kind = f"{stack} block"
    record = run.layout.record
    known = record is not None and record.positions is not None and record.positions.table is not None
    boxes = [
        Stage("ids", "token ids", "The tokenizer turns the text into integer ids."),
        Stage("embedding", "token embedding", "Each id selects one row of the embedding matrix."),
        # a model placed by discovery, or one whose positions act inside attention: no box of its own
        *([Stage("positions", record.positions.label, record.positions.help)] if known else []),
        Stage("stream", "block input X₀", "What enters the first block: the start of the residual stream."),
        Stage("blocks", f"{n} × {kind}", "The stream after the block chosen with the layer slider."),
    ]
    if run.layout.final_norm and stack == "decoder":
        boxes.append(Stage("final_norm", "final norm", "The last block's output, normalised once more."))
    if run.top_ids is not None and stack == "decoder":
        boxes.append(
            Stage(
                "output",
                "LM head → logits",
                "The output head scores every vocabulary token: the top "
                "next token at each position and its probability.",
            )
        )
    else:
        boxes.append(
            Stage(
                "output",
                "token embeddings",
                "An encoder outputs one vector per token: MiniLM averages them into a sentence embedding, "
                "BART's decoder reads them through cross-attention.",
            )
        )
    return tuple(boxes)


def _stack_module(loaded: LoadedModel, run: BlockRun, stack: str):
    """Where the stack's token and position tables live (its record's ``owner``)."""
    record = run.layout.record
    if record is not None and record.owner == "stack":
        return loaded.model.get_submodule(run.layout.stack(stack).path.rsplit(".", 1)[0])  # ".../layers"
    return loaded.model.base_model


def _positions(loaded: LoadedModel, run: BlockRun, stack: str, n: int, layer: int) -> np.ndarray:
    positions = run.layout.record.positions
    table = _stack_module(loaded, run, stack).get_submodule(positions.table)
    if positions.kind == "rotary":
        cos, _ = rotary_angles(table, loaded.model.config, n, layer, loaded.device)
        rows = cos[0, :, : cos.shape[-1] // 2]  # the two halves repeat the same angles
    else:
        offset = getattr(table, positions.offset) if positions.offset else 0
        rows = table.weight[offset : offset + n]
    return rows.detach().float().cpu().numpy()


@torch.no_grad()
def stage_values(loaded: LoadedModel, run: BlockRun, stack: str, key: str, layer: int) -> StageValues:
    """The numbers behind one box for the run's text."""
    data = run.stack(stack)
    ids = torch.tensor(data.ids, device=loaded.device)
    if key == "ids":
        return StageValues("Token ids", ids=data.ids)
    if key == "embedding":
        module = _stack_module(loaded, run, stack)
        tokens = run.layout.record.tokens if run.layout.record else None
        table = module.get_submodule(tokens) if tokens else loaded.model.get_input_embeddings()
        return StageValues("Token embedding rows E[id]", run_module(table, ids).float().cpu().numpy())
    if key == "positions":
        return StageValues("Position information", _positions(loaded, run, stack, len(data.ids), layer))
    if key == "stream":
        return StageValues("X₀: the input of block 0", data.hidden[0])
    if key == "blocks":
        return StageValues(f"The stream after block {layer}", data.hidden[layer + 1])
    if key == "final_norm":
        return StageValues("After the final norm", run.final)
    if run.top_ids is not None and stack == "decoder":
        tokens, _ = readable_tokens(loaded.tokenizer, run.top_ids.tolist())
        return StageValues(
            "The model's next token at each position", top_tokens=tokens, top_probs=run.top_probs
        )
    return StageValues("Output token embeddings", data.hidden[-1])
