"""Prompts as the interventions read them, and one forward through the front door with edits."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError
from txviz.core.layouts import cached_layout
from txviz.core.running import Run, run
from txviz.core.tokens import readable_tokens
from txviz.core.tracing import Encoded, encode
from txviz.interventions.metrics import require_next_token
from txviz.models import LoadedModel

MAX_TOKENS = 256  # a sweep runs one row per head: 270 rows of this many tokens on SmolLM2


class PromptError(UserError):
    """A prompt the interventions cannot read: empty, or longer than they take."""


def prompt_ids(loaded: LoadedModel, text: str, role: str = "prompt") -> list[int]:
    """Token ids of a prompt; a PromptError when it is empty or too long.

    A long prompt is refused, not cut: the metric reads the token after the prompt's end.
    """
    encoded = _encoded(loaded, text, role)
    if encoded.notice:
        raise PromptError(
            f"The {role} has {_count(loaded, text):,} tokens; interventions read at most "
            f"{len(encoded.ids):,} (the metric reads the token after its end, so it is not cut): shorten it."
        )
    return encoded.ids


def cut_prompt(loaded: LoadedModel, text: str, role: str = "prompt") -> tuple[str, str]:
    """A prompt cut to the tokens the interventions read, and a notice of how many were kept ("" if none were cut)."""
    encoded = _encoded(loaded, text, role)
    if not encoded.notice:
        return text, ""
    end = max(stop for _, stop in encoded.offsets)  # special tokens have empty spans (0, 0)
    notice = (
        f"The {role} has {_count(loaded, text):,} tokens; only its first {len(encoded.ids):,} are kept "
        f"(interventions read at most {len(encoded.ids):,})."
    )
    return text[:end], notice


def _encoded(loaded: LoadedModel, text: str, role: str) -> Encoded:
    require_next_token(loaded)
    if not text or not text.strip():
        raise PromptError(f"The {role} is empty: type a prompt, a few words for the model to continue.")
    return encode(loaded, text, MAX_TOKENS)


def _count(loaded: LoadedModel, text: str) -> int:
    return len(loaded.tokenizer(text)["input_ids"])


def prompt_tokens(loaded: LoadedModel, text: str) -> tuple[str, ...]:
    """The readable tokens of a prompt, as the interventions read it."""
    return tokens_of(loaded, prompt_ids(loaded, text))


def tokens_of(loaded: LoadedModel, ids: Sequence[int]) -> tuple[str, ...]:
    return readable_tokens(loaded.tokenizer, list(ids))[0]


def forward(
    loaded: LoadedModel,
    ids: torch.Tensor,  # (B, T)
    interventions: Sequence = (),
    record: frozenset[str] = frozenset(),
    stages: frozenset[str] = frozenset(),
    grad: bool = False,
) -> Run:
    """One pass under the given interventions; ``run.logits`` is (B, 1, V) at the last position."""
    settings = CaptureSettings(record=record, stages=stages, interventions=tuple(interventions))
    return run(
        loaded.model,
        settings,
        ("last_logits",),
        grad=grad,
        input_ids=ids.to(loaded.device),
    )


def top_next_token(loaded: LoadedModel, text: str) -> str:
    """The model's own likeliest next token after ``text``, as text (an answer to score)."""
    logits = forward(loaded, repeated(prompt_ids(loaded, text), 1)).logits[0, -1]
    return loaded.tokenizer.decode([int(logits.argmax())])


def likeliest_next_tokens(loaded: LoadedModel, text: str, k: int = 2) -> list[str]:
    """The model's ``k`` likeliest next tokens after ``text``, likeliest first, as text (answers to score)."""
    logits = forward(loaded, repeated(prompt_ids(loaded, text), 1)).logits[0, -1]
    return [loaded.tokenizer.decode([int(i)]) for i in logits.topk(k).indices]


def unplaced(loaded: LoadedModel, point: str) -> str:
    """Why this model's ``point`` ("ffn", "head_out", ...) cannot be placed, "" when it can: a feature asks
    only for the points it needs, so a model placed by discovery runs the rest."""
    return cached_layout(loaded.model).unplaced(point)


def head_layers(loaded: LoadedModel) -> tuple[int, ...]:
    """The blocks with heads: every one, or those of a hybrid that call the attention function."""
    layers = cached_layout(loaded.model).attention_layers
    return tuple(range(loaded.n_layers)) if layers is None else layers


def repeated(ids: Sequence[int], rows: int) -> torch.Tensor:
    """The same prompt in ``rows`` batch rows: one intervention per row."""
    return torch.tensor([list(ids)], dtype=torch.long).repeat(rows, 1)


def chunks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), max(1, size))]
