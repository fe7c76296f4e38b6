"""The one readable-token function: Ġ, Ċ and ## turned into text, spaces kept visible on request."""

import pytest

from txviz.core.tokens import readable_token


class ByteLevel:
    """Like a GPT-2-style tokenizer: Ġ is a space, Ċ a line break, ĉ a tab."""

    def convert_tokens_to_string(self, tokens):
        return "".join(tokens).replace("Ġ", " ").replace("Ċ", "\n").replace("ĉ", "\t")


class WordPiece:
    """Like BERT's: a lone continuation piece keeps its ##."""

    def convert_tokens_to_string(self, tokens):
        return " ".join(tokens).replace(" ##", "")


class Refuses:
    def convert_tokens_to_string(self, tokens):
        raise KeyError(tokens[0])


@pytest.mark.parametrize(
    ("tokenizer", "raw", "shown", "with_spaces"),
    [
        (ByteLevel(), "Ġworld", "world", "␣world"),
        (ByteLevel(), "world", "world", "world"),
        (ByteLevel(), "Ġ", "␣", "␣"),
        (ByteLevel(), "ĠĠ", "␣␣", "␣␣"),
        (ByteLevel(), "Ċ", "↵", "↵"),
        (ByteLevel(), "ĉ", "⇥", "⇥"),
        (ByteLevel(), "Ġ<b>", "<b>", "␣<b>"),  # text stays text: escaping is the figures' job
        (WordPiece(), "##ing", "ing", "ing"),
        (WordPiece(), "##", "##", "##"),
        (WordPiece(), "[CLS]", "[CLS]", "[CLS]"),
        (Refuses(), "odd", "odd", "odd"),
        (ByteLevel(), "", "∅", "∅"),
    ],
)
def test_readable_token(tokenizer, raw, shown, with_spaces):
    assert readable_token(tokenizer, raw) == shown
    assert readable_token(tokenizer, raw, keep_spaces=True) == with_spaces
