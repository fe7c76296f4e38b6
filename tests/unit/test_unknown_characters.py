"""The note on unknown tokens names the characters behind them, and stays silent without any."""

from __future__ import annotations

from txviz.core.tokens import unknown_note


class WordPiece:
    """A toy tokenizer that knows ASCII only, as a word-piece vocabulary without emoji does."""

    unk_token, unk_token_id = "[UNK]", 100

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict:
        return {"input_ids": [1 if ch.isascii() else self.unk_token_id for ch in text]}


class ByteLevel(WordPiece):
    unk_token = unk_token_id = None  # every byte is a token: nothing is unknown


def test_the_note_names_each_unknown_character_once():
    note = unknown_note(WordPiece(), "ok 🙂 and 🙂é", ("ok", "[UNK]", "and", "[UNK]"))
    assert note.startswith("2 tokens are [UNK]")
    assert "`🙂` (U+1F642), `é` (U+00E9)" in note and note.count("🙂") == 1


def test_no_note_without_unknown_tokens():
    assert unknown_note(WordPiece(), "plain text", ("plain", "text")) is None
    assert unknown_note(ByteLevel(), "🙂", ("ð", "Ł")) is None
