"""One base for every mistake a user can make: the UI shows its message and stops the page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# What each kind of model does, in the words every wrong-kind message uses.
KIND_SAYS = {
    "encoder": "it reads text and has no next-token head",
    "decoder": "it reads text and predicts the next token",
    "encoder-decoder": "it reads a source text and writes a new one",
    "vision": "it reads images, not text",
}
# The page that does take a model of this kind, named in the message.
KIND_PAGE = {"vision": "Vision Transformer", "encoder-decoder": "Encoder-Decoder"}


class UserError(ValueError):
    """Bad input, a model of the wrong kind, a failed load: the message is written for the user."""


class WrongModelKind(UserError):
    """A model of a kind this function cannot run (text vs image, encoder vs decoder...)."""


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def require_kind(loaded: Any, kinds: Sequence[str], task: str) -> None:
    """Raise WrongModelKind unless ``loaded.kind`` is one of ``kinds``; ``task`` says what was asked."""
    if loaded.kind in kinds:
        return
    says = KIND_SAYS.get(loaded.kind, f"it is not one of {', '.join(KIND_SAYS)}")
    page = KIND_PAGE.get(loaded.kind)
    where = f", or open the {page} page" if page and page != KIND_PAGE.get(kinds[0]) else ""
    raise WrongModelKind(
        f"{loaded.name} is {_a(loaded.kind)} model: {says}, so it cannot {task}. "
        f"Choose {' or '.join(_a(k) for k in kinds)} model{where}."
    )
