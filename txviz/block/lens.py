"""The logit lens (nostalgebraist 2020): read the residual stream after every block with the final
norm and the output head, as if the model stopped there."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
import torch

from txviz.block.recording import BlockRun, run_text
from txviz.core.errors import UserError
from txviz.core.layouts import cached_layout
from txviz.core.tokens import readable_tokens
from txviz.models import LoadedModel


class NoLensError(UserError):
    """The model has no output head to read its stream with."""


@dataclass(frozen=True, eq=False)
class Lens:
    """Top token and its probability for every layer (row 0: the embeddings) and position."""

    tokens: tuple[str, ...]  # the input tokens
    top_ids: np.ndarray  # (N + 1, T) int64
    top_probs: np.ndarray  # (N + 1, T) float32
    top_tokens: tuple[tuple[str, ...], ...]  # (N + 1) x T readable top tokens
    final_rank: np.ndarray  # (N + 1, T): rank (0 = top) of the model's final choice (or the targets)
    final_prob: np.ndarray  # (N + 1, T): its probability at each layer


def check_lens(loaded: LoadedModel) -> None:
    """A clear NoLensError unless the model has an output head to read its stream with."""
    if loaded.kind == "encoder" or cached_layout(loaded.model).lm_head is None:
        raise NoLensError(
            f"{loaded.name} is an {loaded.kind} without a language-model head: it outputs token embeddings, "
            "not next-token scores, so there is nothing to read its stream with. Choose a decoder such as "
            "smollm2 for the logit lens."
        )


def _head(loaded: LoadedModel, run: BlockRun):
    """(final norm or None, output head, its extra bias or None)."""
    check_lens(loaded)
    layout, model = run.layout, loaded.model
    norm = model.get_submodule(layout.final_norm) if layout.final_norm else None
    return norm, model.get_submodule(layout.lm_head), getattr(model, "final_logits_bias", None)


@torch.no_grad()
def logit_lens(
    loaded: LoadedModel, run: BlockRun, positions: slice = slice(None), targets: np.ndarray | None = None
) -> Lens:
    """Lens of the run's decoder stream at ``positions``. Each layer goes through the same modules
    the model's last layer went through, one layer at a time, so the last row is the model's output.

    ``final_rank`` and ``final_prob`` follow ``targets`` (one token id per position, e.g. a sampled
    token) when given, else the model's own final choice."""
    norm, head, bias = _head(loaded, run)
    record = run.layout.record
    scale = record.head_scale(loaded.config) if record is not None and record.head_scale else None
    stack = run.stack("decoder")
    final = torch.tensor(run.top_ids[positions] if targets is None else np.asarray(targets), dtype=torch.long)
    ids, probs, ranks, chosen = [], [], [], []
    for row in stack.hidden:
        # (1, T, D) as the model's own call had it: in its weights' precision (the stream is kept float32)
        h = torch.tensor(row[positions], device=loaded.device, dtype=head.weight.dtype)[None]
        h = norm(h) if norm is not None else h
        logits = head(h * scale if scale else h)
        if bias is not None:
            logits = logits + bias
        cap = getattr(loaded.config, "final_logit_softcapping", None)
        if cap:  # Gemma soft-caps its output logits after the head
            logits = cap * torch.tanh(logits / cap)
        p = torch.softmax(logits[0].float(), dim=-1).cpu()  # (T, V)
        best = p.max(dim=-1)
        ids.append(best.indices)
        probs.append(best.values)
        p_final = p.gather(1, final[:, None])[:, 0]
        chosen.append(p_final)
        ranks.append((p > p_final[:, None]).sum(-1))
    top_ids = torch.stack(ids).numpy()
    top_tokens = tuple(readable_tokens(loaded.tokenizer, row.tolist())[0] for row in top_ids)
    return Lens(
        stack.tokens[positions], top_ids, torch.stack(probs).numpy().astype(np.float32), top_tokens,
        torch.stack(ranks).numpy(), torch.stack(chosen).numpy().astype(np.float32),
    )  # fmt: skip


def lens_of_text(loaded: LoadedModel, text: str, max_tokens: int | None = None) -> tuple[Lens, str]:
    """The lens of a text and the notice when it was cut."""
    check_lens(loaded)
    run = run_text(loaded, text, max_tokens=max_tokens) if max_tokens else run_text(loaded, text)
    return logit_lens(loaded, run), run.notice


def lens_bytes(lens: Lens, fmt: str = "npz") -> bytes:
    """top_ids and top_probs ([N + 1, T]: row 0 the embeddings, the last row the model's own argmax)
    and the input tokens, as .npz or JSON."""
    if fmt == "json":
        data = {"top_ids": lens.top_ids.tolist(), "top_probs": lens.top_probs.tolist(),
                "tokens": list(lens.tokens), "top_tokens": [list(r) for r in lens.top_tokens]}  # fmt: skip
        return json.dumps(data).encode()
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer, top_ids=lens.top_ids, top_probs=lens.top_probs, tokens=np.array(lens.tokens, dtype=str),
        top_tokens=np.array(lens.top_tokens, dtype=str),
    )  # fmt: skip
    return buffer.getvalue()
