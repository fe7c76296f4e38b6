"""Real tokenizers word by word: byte-level BPE merges in rank order, WordPiece pieces."""

from __future__ import annotations

from dataclasses import dataclass

from txviz.core.tokens import readable_token
from txviz.tokenization.bpe import MergeStage, apply_merges, read_merges

MAX_TEXT_CHARS = 2_000  # per-word merge replay is quadratic in word length; keep pages quick


@dataclass(frozen=True)
class WordTokens:
    """One word (pre-token) of a text as a real tokenizer cut it."""

    text: str  # the characters of the user's text this word covers
    raw_symbols: tuple[str, ...]  # starting symbols: byte-level characters, or the whole word
    stages: tuple[MergeStage, ...]  # BPE merges applied, lowest rank first (empty for WordPiece)
    tokens: tuple[str, ...]  # the tokenizer's own pieces (Ġ, ##)
    readable: tuple[str, ...]  # the same pieces as text a person reads
    ids: tuple[int, ...]
    offsets: tuple[tuple[int, int], ...] = ()  # (start, end) of each token in the user's text


@dataclass(frozen=True)
class MergeRanks:
    """A byte-level BPE tokenizer's merges: pair -> rank (0 = applied first)."""

    ranks: dict[tuple[str, str], int]
    ignore_merges: bool  # some tokenizers take a whole word when it is in the vocabulary

    @classmethod
    def from_tokenizer(cls, tokenizer) -> MergeRanks:
        """Read the merge list from a fast tokenizer's JSON."""
        pairs, ignore_merges = read_merges(tokenizer.backend_tokenizer)
        return cls({pair: rank for rank, pair in enumerate(pairs)}, ignore_merges)


def _encode(tokenizer, text: str):
    """Tokens, ids, word index and offsets of a text, without special tokens or padding."""
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return encoding.tokens(), encoding["input_ids"], encoding.word_ids(), encoding["offset_mapping"]


def _group_by_word(tokenizer, text: str) -> list[tuple[int, str, list[str], list[int], list]]:
    """(word index, word text, tokens, ids, offsets) for each word the pre-tokenizer made."""
    tokens, ids, word_ids, offsets = _encode(tokenizer, text)
    groups: dict[int, tuple[list[str], list[int], list[tuple[int, int]]]] = {}
    for token, token_id, word, span in zip(tokens, ids, word_ids, offsets, strict=True):
        if word is None:
            continue
        group = groups.setdefault(word, ([], [], []))
        group[0].append(token)
        group[1].append(int(token_id))
        group[2].append(tuple(span))
    return [
        (word, text[spans[0][0] : spans[-1][1]], toks, tids, spans)
        for word, (toks, tids, spans) in sorted(groups.items())
    ]


def byte_level_words(tokenizer, text: str, ranks: MergeRanks | None = None) -> list[WordTokens]:
    """Each word of a text through a byte-level BPE tokenizer, with the merges it applies."""
    text = text[:MAX_TEXT_CHARS]
    ranks = ranks or MergeRanks.from_tokenizer(tokenizer)
    backend = tokenizer.backend_tokenizer
    normalized = backend.normalizer.normalize_str(text) if backend.normalizer else text
    words = [piece for piece, _ in backend.pre_tokenizer.pre_tokenize_str(normalized)]
    vocab = tokenizer.get_vocab()
    out = []
    for word, word_text, tokens, ids, spans in _group_by_word(tokenizer, text):
        raw_word = words[word]
        symbols = tuple(raw_word)
        if ranks.ignore_merges and raw_word in vocab:
            stages: list[MergeStage] = []
        else:
            stages = apply_merges(list(symbols), ranks.ranks)
        out.append(
            WordTokens(
                text=word_text,
                raw_symbols=symbols,
                stages=tuple(stages),
                tokens=tuple(tokens),
                readable=tuple(readable_token(tokenizer, t, keep_spaces=True) for t in tokens),
                ids=tuple(ids),
                offsets=tuple(spans),
            )
        )
    return out


def wordpiece_words(tokenizer, text: str) -> list[WordTokens]:
    """Each word of a text through a WordPiece tokenizer (greedy longest match, ## inside)."""
    out = []
    for _, word_text, tokens, ids, spans in _group_by_word(tokenizer, text[:MAX_TEXT_CHARS]):
        out.append(
            WordTokens(
                text=word_text,
                raw_symbols=(word_text,),
                stages=(),
                tokens=tuple(tokens),
                readable=tuple(readable_token(tokenizer, t, keep_spaces=True) for t in tokens),
                ids=tuple(ids),
                offsets=tuple(spans),
            )
        )
    return out


def final_pieces(word: WordTokens) -> tuple[str, ...]:
    """The pieces the replayed merges end with (the starting symbols when none applied)."""
    return word.stages[-1].pieces if word.stages else word.raw_symbols
