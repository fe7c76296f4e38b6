"""The data flow of one forward pass as stages a lecturer can point at, each with its numbers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.block.recording import BlockRun, learned_table
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
    family, n = run.layout.family, run.stack(stack).n_layers
    kind = f"{stack} block" if family != "bert" else "encoder block"
    positions = {
        "bert": Stage(
            "positions",
            "+ positions\n+ segment\n→ LayerNorm",
            "BERT adds a learned vector per position and per segment, then applies LayerNorm.",
        ),
        "gpt2": Stage("positions", "+ learned positions", "GPT-2 adds a learned vector per position."),
        "bart": Stage(
            "positions",
            "+ learned positions\n→ LayerNorm",
            "BART adds a learned vector per position, then applies LayerNorm.",
        ),
        "llama": Stage(
            "positions",
            "rotary positions\n(inside attention)",
            "Llama adds no position vector: every "
            "block rotates its queries and keys by an angle proportional to the position (RoPE). Shown: "
            "cos of each angle, position x frequency.",
        ),
    }.get(family) or _other_positions(run)
    boxes = [
        Stage("ids", "token ids", "The tokenizer turns the text into integer ids."),
        Stage("embedding", "token embedding", "Each id selects one row of the embedding matrix."),
        *([positions] if positions else []),
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


def _other_positions(run: BlockRun) -> Stage | None:
    """The positions box of a decoder txviz has no words of its own for: rotary or a learned table."""
    if run.positions == "rotary":
        return Stage(
            "positions",
            "rotary positions\n(inside attention)",
            f"This {run.layout.model_type} model adds no position vector: every block rotates its queries and "
            "keys by an angle proportional to the position (RoPE). Shown: cos of each angle, position x "
            "frequency.",
        )
    if run.positions == "learned":
        return Stage("positions", "+ learned positions", "The model adds a learned vector per position.")
    return None


def _stack_module(loaded: LoadedModel, run: BlockRun, stack: str):
    path = run.layout.stack(stack).path.rsplit(".", 1)[0]  # ".../layers" -> the encoder/decoder
    return loaded.model.get_submodule(path) if run.layout.family == "bart" else loaded.model.base_model


def _positions(loaded: LoadedModel, run: BlockRun, stack: str, n: int) -> np.ndarray:
    module, family = _stack_module(loaded, run, stack), run.layout.family
    if family == "bert":
        rows = module.embeddings.position_embeddings.weight[:n]
    elif family == "gpt2":
        rows = module.wpe.weight[:n]
    elif family == "bart" or run.positions == "learned":
        table = module.embed_positions if family == "bart" else learned_table(module)
        offset = getattr(table, "offset", 0)
        rows = table.weight[offset : offset + n]
    else:
        x = torch.zeros(1, n, 1, device=loaded.device)
        cos, _ = module.rotary_emb(x, torch.arange(n, device=loaded.device)[None])
        rows = cos[0, :, : cos.shape[-1] // 2]  # the two halves repeat the same angles
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
        table = module.embed_tokens if run.layout.family == "bart" else loaded.model.get_input_embeddings()
        return StageValues("Token embedding rows E[id]", table(ids).float().cpu().numpy())
    if key == "positions":
        return StageValues("Position information", _positions(loaded, run, stack, len(data.ids)))
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
