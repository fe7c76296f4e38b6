"""Tokens as people read them: Ġ and ▁ become spaces, ## joins, invisible ones get a symbol."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "": "∅"}


def readable_token(tokenizer, raw: str, keep_spaces: bool = False) -> str:
    """One tokenizer piece as text for an axis tick: 'Ġcat' -> 'cat', '##ing' -> 'ing'.

    The one place that turns Ġ, ▁, Ċ and ## into text. keep_spaces shows the piece's own spaces and
    line breaks as symbols ('Ġcat' -> '␣cat'), for views about how tokenizers cut text.
    """
    if raw is None:  # an id past the tokenizer's vocabulary (models often pad their embedding)
        return "∅"
    try:
        text = tokenizer.convert_tokens_to_string([raw])
    except Exception:  # some tokenizers reject lone pieces; the raw piece is still honest
        # Debug: this runs once per token, and the raw piece is a correct label anyway.
        log.debug("%s could not decode a lone piece", type(tokenizer).__name__, exc_info=True)
        text = raw
    core = text.strip()
    if core.startswith("##") and len(core) > 2:  # WordPiece continuation shown alone
        text, core = text.replace("##", "", 1), core[2:]
    if core and not keep_spaces:
        return core
    return "".join(VISIBLE.get(ch, ch) for ch in text) or VISIBLE[""]


def readable_tokens(tokenizer, ids: list[int]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(readable tokens, raw tokenizer pieces) for a list of token ids."""
    pieces = tokenizer.convert_ids_to_tokens(list(ids))
    raw = tuple(f"<id {i}>" if piece is None else piece for i, piece in zip(ids, pieces, strict=True))
    return tuple(readable_token(tokenizer, r) for r in raw), raw


def special_flags(tokenizer, ids: list[int]) -> tuple[bool, ...]:
    """True for [CLS], [SEP], <s> and the other special tokens."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    return tuple(int(i) in special for i in ids)


def word_groups(tokenizer, text: str, ids: list[int], offsets: list[tuple[int, int]]) -> list[int]:
    """For each token, the index of the word it belongs to (specials get their own group)."""
    groups, word, last_end = [], -1, None
    for (start, end), flag in zip(offsets, special_flags(tokenizer, ids), strict=True):
        starts_word = (
            flag
            or start == end
            or last_end is None
            or start > last_end
            or text[start : start + 1].isspace()
            or not text[start : start + 1].isalnum()
            or not text[last_end - 1 : last_end].isalnum()
        )
        if starts_word:
            word += 1
        groups.append(word)
        last_end = None if flag or start == end else end
    return groups


def unknown_characters(tokenizer, text: str) -> tuple[str, ...]:
    """Characters of the text that the tokenizer reads only as its unknown token, in order of first use."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:  # byte-level tokenizers know every character
        return ()
    chars = [ch for ch in dict.fromkeys(text) if not ch.isspace()]
    return tuple(ch for ch in chars if unk in tokenizer(ch, add_special_tokens=False)["input_ids"])


def unknown_note(tokenizer, text: str, raw_tokens: tuple[str, ...]) -> str | None:
    """Why some tokens are the unknown token, naming the characters behind them; None when none are."""
    unk = getattr(tokenizer, "unk_token", None)
    count = sum(piece == unk for piece in raw_tokens) if unk else 0
    if not count:
        return None
    chars = unknown_characters(tokenizer, text)
    # Code spans and code points: the characters are the user's, shown literally.
    named = ", ".join(f"`{ch}` (U+{ord(ch):04X})" for ch in chars) or "some characters"
    tokens = "1 token is" if count == 1 else f"{count} tokens are"
    return (
        f"{tokens} {unk}, the tokenizer's unknown token: its vocabulary has no piece for {named}. "
        "A word-piece tokenizer then reads the whole word containing them as one "
        f"{unk}, so the model cannot tell these words apart."
    )
