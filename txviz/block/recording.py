"""One forward pass with the residual stream between blocks and, when asked, each block's stages.

The stream between blocks is the model's own ``output_hidden_states``; the stages inside a block
(what attention and the FFN add, the FFN's hidden activations) are recorded by the same ``run``
(txviz.core.running), through hooks installed once per model that record only when asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.layouts import Layout, cached_layout
from txviz.core.running import Run, generate, run
from txviz.core.tokens import readable_tokens
from txviz.core.tracing import encode
from txviz.models import LoadedModel

STAGES = frozenset({"attn", "ffn", "cross"})  # every stage inside a block
MAX_TOKENS = 256  # a paragraph: every stage of SmolLM2's 30 blocks stays under ~100 MB
MAX_TARGET_TOKENS = 40


@dataclass(frozen=True, eq=False)
class StackRun:
    """One stack of blocks on one input, float32 numpy, batch item 0."""

    name: str  # "encoder" or "decoder"
    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    hidden: np.ndarray  # (N + 1, T, D): row 0 the embeddings, row i the stream after block i
    attn: np.ndarray | None = None  # (N, T, D): what self-attention adds (before the residual add)
    cross: np.ndarray | None = None  # (N, T, D): what cross-attention adds
    ffn: np.ndarray | None = None  # (N, T, D): what the FFN adds
    ffn_hidden: np.ndarray | None = None  # (N, T, F): the FFN's hidden activations

    @property
    def n_layers(self) -> int:
        return self.hidden.shape[0] - 1


@dataclass(frozen=True, eq=False)
class BlockRun:
    """A model's stacks on a text, its final norm's output and its own next-token choices."""

    model_name: str
    layout: Layout
    stacks: tuple[StackRun, ...]
    final: np.ndarray | None  # (T, D) after the final norm (decoders with one)
    top_ids: np.ndarray | None  # (T,) the model's own argmax of its logits (models with an LM head)
    top_probs: np.ndarray | None  # (T,) its probability
    notice: str = ""
    stages: frozenset[str] = frozenset()

    def stack(self, name: str | None = None) -> StackRun:
        if name is None:
            return self.stacks[-1]
        for stack in self.stacks:
            if stack.name == name:
                return stack
        raise UserError(f"This model has no {name}; it has {', '.join(s.name for s in self.stacks)}.")


def _stack_stages(recorder: Run, stack: str, n_layers: int, kinds: frozenset[str], hidden: bool) -> dict:
    """Stacked (N, T, ...) arrays of each stage recorded for one stack; ``hidden``: the FFN point's
    input is the FFN's hidden activations (its down projection is the point)."""
    out = {}
    for kind in ("attn", "cross", "ffn"):
        records = [recorder.stage(f"{stack}.{i}.{kind}") for i in range(n_layers)]
        if kind in kinds and all(records):
            out[kind] = np.stack([r.output[0].float().cpu().numpy() for r in records])
            if kind == "ffn" and hidden and all(r.input is not None for r in records):
                out["ffn_hidden"] = np.stack([r.input[0].float().cpu().numpy() for r in records])
    return out


def _hidden(states: tuple[torch.Tensor, ...], pre_final: torch.Tensor | None) -> np.ndarray:
    """(N + 1, T, D); transformers' last entry is after the final norm, so use the norm's input there."""
    rows = list(states[:-1]) + [pre_final if pre_final is not None else states[-1]]
    return torch.stack([r[0] for r in rows]).float().cpu().numpy()


def _target_ids(loaded: LoadedModel, source: torch.Tensor) -> torch.Tensor:
    """The decoder's input for an encoder-decoder: its start token and its own greedy output."""
    out = generate(
        loaded.model, input_ids=source, max_new_tokens=MAX_TARGET_TOKENS, do_sample=False, num_beams=1
    )
    return out[:, :-1] if out.shape[1] > 1 else out


def run_text(
    loaded: LoadedModel, text: str, stages: frozenset[str] = frozenset(), max_tokens: int = MAX_TOKENS
) -> BlockRun:
    """The residual stream of ``text`` through every block, with the asked ``stages`` recorded."""
    require_kind(loaded, ("encoder", "decoder", "encoder-decoder"), "show the residual stream of a text")
    encoded = encode(loaded, text, max_tokens)
    return run_ids(loaded, encoded.ids, stages, encoded.notice)


def run_ids(
    loaded: LoadedModel, token_ids: Sequence[int], stages: frozenset[str] = frozenset(), notice: str = ""
) -> BlockRun:
    """The residual stream of the token ids as given (a generation's ids, which need not survive
    decoding and re-encoding), with the asked ``stages`` recorded."""
    require_kind(loaded, ("encoder", "decoder", "encoder-decoder"), "show the residual stream of tokens")
    layout = cached_layout(loaded.model)
    ids = torch.tensor([list(token_ids)], device=loaded.device)
    kinds = frozenset(stages) | {"final_norm"}
    inputs = {"input_ids": ids}
    if loaded.kind == "encoder-decoder":
        inputs["decoder_input_ids"] = _target_ids(loaded, ids)
    recorder = run(
        loaded.model,
        CaptureSettings(stages=kinds),
        ("output",),
        **inputs,
        output_hidden_states=True,
        use_cache=False,
    )
    out = recorder.output
    final_in = recorder.stage("final_norm")
    runs = []
    reads_hidden = layout.record is not None and layout.record.ffn.reads_hidden
    for stack in layout.stacks:
        if stack.name == "decoder" and loaded.kind == "encoder-decoder":
            stack_ids, states = inputs["decoder_input_ids"][0].tolist(), out.decoder_hidden_states
        elif stack.name == "encoder" and loaded.kind == "encoder-decoder":
            stack_ids, states = list(token_ids), out.encoder_hidden_states
        else:
            stack_ids, states = list(token_ids), out.hidden_states
        pre_final = final_in.input if final_in is not None and stack.name == "decoder" else None
        tokens, _ = readable_tokens(loaded.tokenizer, stack_ids)
        runs.append(
            StackRun(
                stack.name,
                tokens,
                tuple(stack_ids),
                _hidden(states, pre_final),
                **_stack_stages(recorder, stack.name, stack.n_layers, kinds, reads_hidden),
            )  # fmt: skip
        )
    final = states[-1][0].float().cpu().numpy() if final_in is not None else None
    top_ids = top_probs = None
    if getattr(out, "logits", None) is not None:
        probs = torch.softmax(out.logits[0].float(), dim=-1)
        best = probs.max(dim=-1)
        top_ids, top_probs = best.indices.cpu().numpy(), best.values.cpu().numpy()
    return BlockRun(loaded.name, layout, tuple(runs), final, top_ids, top_probs, notice, frozenset(stages))


def read_only(run: BlockRun) -> BlockRun:
    """Lock every array of a run shared between sessions (st.cache_resource)."""
    for stack in run.stacks:
        for name in ("hidden", "attn", "cross", "ffn", "ffn_hidden"):
            array = getattr(stack, name)
            if array is not None:
                array.setflags(write=False)
    for array in (run.final, run.top_ids, run.top_probs):
        if array is not None:
            array.setflags(write=False)
    return run
