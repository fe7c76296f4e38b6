"""Byte-pair encoding trained step by step, every merge recorded.

The corpus is first normalised: every whitespace character becomes one space, shown as `_`.
The textbook rule says the first token of a merged pair cannot end in whitespace, so no token
ever reaches across a word boundary. That is the same as cutting the corpus into pre-tokens,
each a run of non-space characters followed by at most one space ("sea_"), and merging inside
them only. Pair counts are kept up to date incrementally: a merge rewrites only the words that
hold the chosen pair, never the whole corpus.

Ties: of the pairs with the highest count, the one with the smallest (left id, right id) wins,
where ids number the initial characters in code-point order and then every new token in the
order it was made. That is how the `tokenizers` library's BpeTrainer breaks ties, so both
learn the same merges on the same words (see `tokenizers_merges`).
"""

from __future__ import annotations

import heapq
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

SAILOR_RHYME = (
    "a sailor went to sea sea sea\n"
    "to see what he could see see see\n"
    "but all that he could see see see\n"
    "was the bottom of the deep blue sea sea sea\n"
)
WHITESPACE_SHOWN_AS = "_"
MAX_CORPUS_BYTES = 1_000_000  # a page trains in a few seconds on this much text
MAX_MERGES = 5_000  # keeps a page responsive whatever target a user types

_WHITESPACE = re.compile(r"\s")
_PRE_TOKEN = re.compile(r"[^ ]* |[^ ]+")  # word plus its one trailing space, or a final word


class BpeInputError(ValueError):
    """A corpus or setting the trainer cannot use; the message is meant for the user."""


@dataclass(frozen=True)
class BpeStep:
    """One merge: the pair chosen, the token it made and the token counts it changed."""

    index: int  # 1 for the first merge
    pair: tuple[str, str]
    new_token: str
    pair_count: int  # adjacent occurrences of the pair when it was chosen
    merged: int  # occurrences replaced; fewer than pair_count only in runs such as "sss"
    changed_counts: tuple[tuple[str, int], ...]  # (token, count after this merge)
    vocab_size: int  # learned vocabulary: alphabet plus every distinct token made so far
    tokens_in_use: int  # distinct tokens with a count above zero in the corpus
    corpus_tokens: int  # length of the whole corpus in tokens


@dataclass(frozen=True)
class BpeTrace:
    """A whole BPE training run: the starting counts and every merge after it."""

    alphabet: tuple[str, ...]  # initial characters in code-point order (their ids)
    initial_counts: tuple[tuple[str, int], ...]  # (character, count), most frequent first
    word_counts: tuple[tuple[str, int], ...]  # pre-tokens and their counts, most frequent first
    steps: tuple[BpeStep, ...]
    stop_reason: str

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The learned merges in rank order."""
        return [step.pair for step in self.steps]

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def counts_at(self, step: int) -> dict[str, int]:
        """Token counts after `step` merges (0 = characters only), zero counts left out."""
        if not 0 <= step <= len(self.steps):
            raise IndexError(f"step {step} outside 0..{len(self.steps)}")
        counts = dict(self.initial_counts)
        for record in self.steps[:step]:
            counts.update(record.changed_counts)
        return {token: n for token, n in counts.items() if n > 0}

    def tokens_in_use_curve(self) -> list[int]:
        """Distinct tokens in the corpus after each step, starting at step 0."""
        return [len(self.alphabet)] + [step.tokens_in_use for step in self.steps]

    def vocab_size_curve(self) -> list[int]:
        """Learned vocabulary size after each step, starting at step 0."""
        return [len(self.alphabet)] + [step.vocab_size for step in self.steps]

    def segment(self, word: str, upto: int | None = None) -> list[MergeStage]:
        """How the first `upto` learned merges (all by default) cut one word, stage by stage."""
        merges = self.merges if upto is None else self.merges[:upto]
        ranks = {pair: rank for rank, pair in enumerate(merges)}
        return apply_merges(list(normalize_corpus(word)), ranks)


@dataclass(frozen=True)
class MergeStage:
    """One merge applied while segmenting a word: which pair, its rank, the pieces after."""

    rank: int  # position of the merge in the merge list (0 = learned first)
    pair: tuple[str, str]
    pieces: tuple[str, ...]  # the word's tokens after this merge


def show_whitespace(token: str) -> str:
    """A token as the textbook prints it, spaces as `_`."""
    return token.replace(" ", WHITESPACE_SHOWN_AS)


def normalize_corpus(text: str) -> str:
    """Every whitespace character becomes one plain space, so all of it shows as `_`."""
    return _WHITESPACE.sub(" ", text)


def pre_tokenize(text: str) -> list[str]:
    """Cut normalised text into words that each keep their one trailing space."""
    return _PRE_TOKEN.findall(text)


def check_corpus(text: str) -> str:
    """The normalised corpus, or a BpeInputError when there is nothing to train on."""
    if not text or not text.strip():
        raise BpeInputError("The corpus is empty: type some text or upload a .txt file.")
    if len(text.encode("utf-8")) > MAX_CORPUS_BYTES:
        raise BpeInputError(
            f"The corpus is longer than {MAX_CORPUS_BYTES / 1e6:.0f} MB; use a shorter excerpt."
        )
    return normalize_corpus(text)


def count_words(text: str) -> Counter[str]:
    """Pre-token counts of a normalised corpus."""
    return Counter(pre_tokenize(text))


def train_bpe(text: str, vocab_size: int | None = None, max_merges: int | None = MAX_MERGES) -> BpeTrace:
    """Train BPE on a corpus, recording every merge, until the target vocabulary is reached."""
    corpus = check_corpus(text)
    return train_bpe_on_words(count_words(corpus), vocab_size=vocab_size, max_merges=max_merges)


def _merge_symbols(symbols: list[int], left: int, right: int, new: int) -> tuple[list[int], int]:
    """Replace every (left, right) in a word, scanning left to right; return it and the count."""
    out: list[int] = []
    merged = 0
    i, n = 0, len(symbols)
    while i < n:
        if i + 1 < n and symbols[i] == left and symbols[i + 1] == right:
            out.append(new)
            merged += 1
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out, merged


def train_bpe_on_words(
    word_counts: Counter[str] | dict[str, int],
    vocab_size: int | None = None,
    max_merges: int | None = MAX_MERGES,
) -> BpeTrace:
    """Train BPE on pre-tokenised words with counts, recording every merge."""
    if vocab_size is not None and vocab_size < 1:
        raise BpeInputError("The target vocabulary size must be at least 1.")
    if max_merges is not None and max_merges < 0:
        raise BpeInputError("The number of merges cannot be negative.")
    entries = sorted(
        ((word, count) for word, count in word_counts.items() if word and count > 0),
        key=lambda item: (-item[1], item[0]),
    )
    if not entries:
        raise BpeInputError("The corpus is empty: type some text or upload a .txt file.")

    char_counts: Counter[str] = Counter()
    for word, count in entries:
        for char in word:
            char_counts[char] += count
    alphabet = tuple(sorted(char_counts))
    id_of = {token: i for i, token in enumerate(alphabet)}
    token_of = list(alphabet)

    words = [[id_of[char] for char in word] for word, _ in entries]  # symbol ids per word
    counts = [count for _, count in entries]
    token_counts = [char_counts[char] for char in alphabet]  # by token id
    in_use = len(alphabet)
    corpus_tokens = sum(token_counts)

    pair_counts: dict[tuple[int, int], int] = {}
    where: dict[tuple[int, int], set[int]] = {}  # words that may hold a pair (a superset)
    for w, symbols in enumerate(words):
        for pair in pairwise(symbols):
            pair_counts[pair] = pair_counts.get(pair, 0) + counts[w]
            where.setdefault(pair, set()).add(w)
    # Max-heap on count, then ascending pair ids: the tokenizers library's order.
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    steps: list[BpeStep] = []
    stop_reason = "no two tokens stand side by side any more: every word is one token"
    target = vocab_size
    limit = max_merges if max_merges is not None else float("inf")
    while True:
        if target is not None and len(token_of) >= target:
            stop_reason = f"the target vocabulary of {target} tokens was reached"
            break
        if len(steps) >= limit:
            stop_reason = f"the limit of {limit} merges was reached"
            break
        if not heap:
            break
        neg_count, pair = heapq.heappop(heap)
        current = pair_counts.get(pair, 0)
        if -neg_count != current:  # stale entry: requeue with today's count
            if current > 0:
                heapq.heappush(heap, (-current, pair))
            continue
        if current < 1:
            break

        left, right = pair
        new_token = token_of[left] + token_of[right]
        new = id_of.get(new_token)
        if new is None:  # a different pair may already have spelled this token
            new = len(token_of)
            id_of[new_token] = new
            token_of.append(new_token)
            token_counts.append(0)
        merged_total = 0
        fresh: set[tuple[int, int]] = set()
        for w in where.pop(pair, ()):
            symbols = words[w]
            merged_symbols, merged = _merge_symbols(symbols, left, right, new)
            if not merged:
                continue
            count = counts[w]
            for old in pairwise(symbols):
                pair_counts[old] -= count
            for made in pairwise(merged_symbols):
                pair_counts[made] = pair_counts.get(made, 0) + count
                holders = where.get(made)
                if holders is None:
                    where[made] = holders = set()
                holders.add(w)
                if new in made:
                    fresh.add(made)
            words[w] = merged_symbols
            merged_total += merged * count
        for made in fresh:
            if pair_counts[made] > 0:
                heapq.heappush(heap, (-pair_counts[made], made))

        touched = list(dict.fromkeys((left, right, new)))
        before = {t: token_counts[t] > 0 for t in touched}
        token_counts[left] -= merged_total
        token_counts[right] -= merged_total
        token_counts[new] += merged_total
        in_use += sum((token_counts[t] > 0) - before[t] for t in touched)
        corpus_tokens -= merged_total
        steps.append(
            BpeStep(
                index=len(steps) + 1,
                pair=(token_of[left], token_of[right]),
                new_token=new_token,
                pair_count=current,
                merged=merged_total,
                changed_counts=tuple((token_of[t], token_counts[t]) for t in touched),
                vocab_size=len(token_of),
                tokens_in_use=in_use,
                corpus_tokens=corpus_tokens,
            )
        )

    initial = sorted(char_counts.items(), key=lambda item: (-item[1], item[0]))
    return BpeTrace(
        alphabet=alphabet,
        initial_counts=tuple(initial),
        word_counts=tuple(entries),
        steps=tuple(steps),
        stop_reason=stop_reason,
    )


def apply_merges(pieces: list[str], ranks: dict[tuple[str, str], int]) -> list[MergeStage]:
    """Segment one word by always applying its lowest-rank merge; one stage per merge."""
    stages: list[MergeStage] = []
    pieces = list(pieces)
    while len(pieces) > 1:
        candidates = [(ranks[pair], i) for i, pair in enumerate(pairwise(pieces)) if pair in ranks]
        if not candidates:
            break
        rank, i = min(candidates)
        pair = (pieces[i], pieces[i + 1])
        pieces[i : i + 2] = [pair[0] + pair[1]]
        stages.append(MergeStage(rank=rank, pair=pair, pieces=tuple(pieces)))
    return stages


def _tokenizers_trainer(vocab_size: int):
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    # The same cut as pre_tokenize: a word keeps its one trailing space.
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(_PRE_TOKEN.pattern), behavior="isolated")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, min_frequency=0)
    return tokenizer, trainer


def text_chunks(text: str, size: int = 65_536) -> Iterable[str]:
    """Normalised text in pieces cut right after a space, so no pre-token is split."""
    start = 0
    while start < len(text):
        end = text.find(" ", start + size)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def read_merges(backend) -> tuple[list[tuple[str, str]], bool]:
    """(merges in rank order, ignore_merges) of a `tokenizers` BPE tokenizer, read from its JSON.

    The one merge parser: the JSON holds either "a b" strings (older files) or [a, b] pairs.
    ignore_merges: the tokenizer takes a whole word as one token when it is in the vocabulary.
    """
    model = json.loads(backend.to_str())["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"not a BPE tokenizer: its model is {model.get('type')}")
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in model["merges"]]
    return merges, bool(model.get("ignore_merges"))


def tokenizers_merges(text: str, vocab_size: int) -> list[tuple[str, str]]:
    """Merges the `tokenizers` library's BpeTrainer learns on the same normalised corpus."""
    corpus = check_corpus(text)
    tokenizer, trainer = _tokenizers_trainer(vocab_size)
    tokenizer.train_from_iterator(text_chunks(corpus), trainer=trainer)
    return read_merges(tokenizer)[0]


def alphabet_size(text: str) -> int:
    """Distinct characters of a corpus once normalised."""
    return len(set(normalize_corpus(text)))


@dataclass(frozen=True)
class TokenCountRow:
    """One row of the step table: a token, its count now and its count one step before."""

    token: str  # shown with `_` for whitespace
    count: int
    previous: int  # count before this step's merge
    is_new: bool  # made by this step's merge


def count_table(trace: BpeTrace, step: int, top: int | None = None) -> list[TokenCountRow]:
    """Tokens and counts after `step` merges, most frequent first, with the change it made."""
    now = trace.counts_at(step)
    before = trace.counts_at(step - 1) if step > 0 else now
    new_token = trace.steps[step - 1].new_token if step > 0 else None
    shown = set(now) | ({t for t in before if t not in now} if step > 0 else set())
    rows = [
        TokenCountRow(
            token=show_whitespace(token),
            count=now.get(token, 0),
            previous=before.get(token, 0),
            is_new=token == new_token and before.get(token, 0) == 0,
        )
        for token in shown
    ]
    rows.sort(key=lambda row: (-row.count, row.token))
    return rows[:top] if top is not None else rows
