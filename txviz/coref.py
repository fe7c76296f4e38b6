"""Coreference on minimal pairs: where does a pronoun look, and which heads follow the meaning."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from txviz.trace import AttentionTrace

if TYPE_CHECKING:
    from txviz.models import LoadedModel

PAIRS_PATH = Path(__file__).resolve().parent.parent / "assets" / "coref_pairs.json"

# A word is letters or digits, with inner apostrophes kept ("didn't" is one word); punctuation
# is not a word, so "tired." and "tired" are the same word.
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*")

CHANCE = 0.5  # two candidates: a coin flip picks the right one half the time


class CorefInputError(ValueError):
    """A pair or a marking the page cannot use; the message is written for the user."""


@dataclass(frozen=True)
class Word:
    """One word of a sentence and its character span."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class CorefPair:
    """Two sentences that differ in one word, with the pronoun and two candidates marked by word."""

    sentence_a: str
    sentence_b: str
    pronoun: int  # word index of the pronoun (same in A and B)
    candidates: tuple[int, int]  # word indices of the two candidates
    answer_a: int | None = None  # 0 or 1: which candidate the pronoun means in A; None if unknown
    answer_b: int | None = None

    @property
    def words_a(self) -> tuple[Word, ...]:
        return split_words(self.sentence_a)

    @property
    def words_b(self) -> tuple[Word, ...]:
        return split_words(self.sentence_b)

    @property
    def pronoun_text(self) -> str:
        return self.words_a[self.pronoun].text

    @property
    def candidate_texts(self) -> tuple[str, str]:
        words = self.words_a
        return (words[self.candidates[0]].text, words[self.candidates[1]].text)

    @property
    def changed_words(self) -> tuple[int, ...]:
        """Word indices where A and B differ."""
        return differing_words(self.sentence_a, self.sentence_b)

    @property
    def label(self) -> str:
        """Short name for a picker: the pair's changed words."""
        a, b = self.words_a, self.words_b
        swap = " / ".join(f"{a[i].text} / {b[i].text}" for i in self.changed_words)
        return f"{self.candidate_texts[0]} vs {self.candidate_texts[1]} ({swap})"


@dataclass(frozen=True)
class TokenSpans:
    """Token positions of the pronoun and of each candidate (all pieces of each word)."""

    pronoun: tuple[int, ...]
    candidates: tuple[tuple[int, ...], tuple[int, ...]]


def split_words(text: str) -> tuple[Word, ...]:
    """Words of a sentence with their character spans."""
    return tuple(Word(m.group(), m.start(), m.end()) for m in _WORD_RE.finditer(text))


def differing_words(sentence_a: str, sentence_b: str) -> tuple[int, ...]:
    """Indices of the words that differ; the sentences must have the same number of words."""
    a, b = split_words(sentence_a), split_words(sentence_b)
    if len(a) != len(b):
        raise CorefInputError(
            f"Sentence A has {len(a)} words and sentence B has {len(b)}: a minimal pair keeps "
            "every word but one, so both sentences need the same number of words."
        )
    return tuple(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x.text != y.text)


def find_word(words: Sequence[Word], text: str) -> int:
    """Index of the one word equal to text (case-insensitive)."""
    hits = [i for i, w in enumerate(words) if w.text.lower() == text.lower()]
    sentence = " ".join(w.text for w in words)
    if not hits:
        raise CorefInputError(f"'{text}' is not a word of the sentence “{sentence}”.")
    if len(hits) > 1:
        raise CorefInputError(
            f"'{text}' occurs {len(hits)} times in “{sentence}”: mark the one you mean by position."
        )
    return hits[0]


def make_pair(
    sentence_a: str,
    sentence_b: str,
    pronoun: str | int,
    candidates: tuple[str | int, str | int],
    answer_a: str | int | None = None,
    answer_b: str | int | None = None,
) -> CorefPair:
    """Build and check a pair; words are given as text or as word index in sentence A."""
    words = split_words(sentence_a)
    if not sentence_a.strip() or not sentence_b.strip():
        raise CorefInputError("Write both sentences of the pair.")

    def index(word: str | int, role: str) -> int:
        if isinstance(word, int):
            if not 0 <= word < len(words):
                raise CorefInputError(f"The {role} must be one of the {len(words)} words.")
            return word
        return find_word(words, word)

    def answer(value: str | int | None, cands: tuple[int, int]) -> int | None:
        if value is None or isinstance(value, int):
            return value
        index_in_a = find_word(words, value)
        if index_in_a not in cands:
            raise CorefInputError(f"The answer '{value}' is not one of the two candidates.")
        return cands.index(index_in_a)

    cands = (
        index(candidates[0], "first candidate"),
        index(candidates[1], "second candidate"),
    )
    pair = CorefPair(
        sentence_a=sentence_a,
        sentence_b=sentence_b,
        pronoun=index(pronoun, "pronoun"),
        candidates=cands,
        answer_a=answer(answer_a, cands),
        answer_b=answer(answer_b, cands),
    )
    check_pair(pair)
    return pair


def check_pair(pair: CorefPair) -> None:
    """Raise CorefInputError with a clear message if the pair is not a usable minimal pair."""
    changed = differing_words(pair.sentence_a, pair.sentence_b)
    if not changed:
        raise CorefInputError("Sentences A and B are the same: change one word in B.")
    if len(changed) > 1:
        words = pair.words_a
        names = ", ".join(f"'{words[i].text}'" for i in changed)
        raise CorefInputError(f"A minimal pair differs in one word; these differ: {names}.")
    marked = (pair.pronoun, *pair.candidates)
    if len(set(marked)) != 3:
        raise CorefInputError("The pronoun and the two candidates must be three different words.")
    if changed[0] in marked:
        raise CorefInputError(
            "The changed word must not be the pronoun or a candidate: keep them in both sentences."
        )
    for answer in (pair.answer_a, pair.answer_b):
        if answer not in (None, 0, 1):
            raise CorefInputError("An answer must be the first (0) or the second (1) candidate.")


def load_pairs(path: Path = PAIRS_PATH) -> tuple[CorefPair, ...]:
    """The shipped set of minimal pairs."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return tuple(
        make_pair(
            p["a"],
            p["b"],
            p["pronoun"],
            tuple(p["candidates"]),
            p["answer_a"],
            p["answer_b"],
        )
        for p in data["pairs"]
    )


def word_token_positions(offsets: Sequence[tuple[int, int]], word: Word) -> tuple[int, ...]:
    """Positions of every token whose characters overlap the word; special tokens have none."""
    return tuple(
        i for i, (start, end) in enumerate(offsets) if end > start and start < word.end and end > word.start
    )


def token_spans(
    text: str,
    offsets: Sequence[tuple[int, int]],
    pronoun: int,
    candidates: tuple[int, int],
) -> TokenSpans:
    """Map marked words (by index) to token positions using the tokenizer's character offsets."""
    words = split_words(text)

    def span(index: int) -> tuple[int, ...]:
        positions = word_token_positions(offsets, words[index])
        if not positions:
            raise CorefInputError(
                f"'{words[index].text}' has no tokens in the model input (was the text cut short?)."
            )
        return positions

    return TokenSpans(span(pronoun), (span(candidates[0]), span(candidates[1])))


def candidate_attention(weights: np.ndarray, spans: TokenSpans) -> np.ndarray:
    """Attention from the pronoun to each candidate: float [layer, head, 2].

    A candidate's share is the sum over its pieces (the mass it receives as a word), averaged over
    the pronoun's pieces (one query row per piece).
    """
    rows = weights[:, :, list(spans.pronoun), :]  # [L, H, pronoun pieces, K]
    shares = [rows[..., list(c)].sum(axis=-1).mean(axis=-1) for c in spans.candidates]
    return np.stack(shares, axis=-1)  # [L, H, 2]


def hidden_candidates(spans: TokenSpans, causal: bool) -> tuple[int, ...]:
    """Candidates (0, 1) a causal model's pronoun cannot see, because they come after it."""
    if not causal:
        return ()
    first_pronoun = min(spans.pronoun)
    return tuple(i for i, c in enumerate(spans.candidates) if min(c) > first_pronoun)


@dataclass(frozen=True, eq=False)
class PairAttention:
    """Pronoun-to-candidate attention of every head in sentence A and in sentence B."""

    to_candidates_a: np.ndarray  # float [layer, head, 2]
    to_candidates_b: np.ndarray  # float [layer, head, 2]
    candidates: tuple[str, str]
    answer_a: int | None = None
    answer_b: int | None = None
    hidden: tuple[int, ...] = ()  # candidates after the pronoun in a causal model

    @property
    def lean_a(self) -> np.ndarray:
        """[layer, head]: attention to the first candidate minus the second, in A."""
        return self.to_candidates_a[..., 0] - self.to_candidates_a[..., 1]

    @property
    def lean_b(self) -> np.ndarray:
        """[layer, head]: attention to the first candidate minus the second, in B."""
        return self.to_candidates_b[..., 0] - self.to_candidates_b[..., 1]

    @property
    def difference(self) -> np.ndarray:
        """[layer, head]: how much more a head leans to the first candidate in A than in B."""
        return self.lean_a - self.lean_b

    @property
    def sentences(self) -> tuple[tuple[str, np.ndarray, int | None], ...]:
        """("A", shares, answer) and ("B", shares, answer): the two sentences, for per-sentence loops."""
        return (("A", self.to_candidates_a, self.answer_a), ("B", self.to_candidates_b, self.answer_b))

    def head_pick(self, shares: np.ndarray, head: tuple[int, int]) -> int | None:
        """Which candidate (0 or 1) one head attends to more in one sentence; None for a tie."""
        pick = float(picks(shares)[head])
        return None if pick == 0.5 else int(pick)


def pair_attention(
    weights_a: np.ndarray,
    weights_b: np.ndarray,
    spans_a: TokenSpans,
    spans_b: TokenSpans,
    pair: CorefPair,
    causal: bool = False,
) -> PairAttention:
    """Pronoun-to-candidate attention for both sentences of a pair."""
    return PairAttention(
        to_candidates_a=candidate_attention(weights_a, spans_a),
        to_candidates_b=candidate_attention(weights_b, spans_b),
        candidates=pair.candidate_texts,
        answer_a=pair.answer_a,
        answer_b=pair.answer_b,
        hidden=hidden_candidates(spans_a, causal),
    )


def picks(to_candidates: np.ndarray) -> np.ndarray:
    """[layer, head]: the candidate a head attends to more (0 or 1), or 0.5 for a tie."""
    first, second = to_candidates[..., 0], to_candidates[..., 1]
    return np.where(np.isclose(first, second, rtol=0, atol=1e-7), 0.5, (second > first) * 1.0)


def sentence_credit(to_candidates: np.ndarray, answer: int) -> np.ndarray:
    """[layer, head]: 1 if a head attends more to the right candidate, 0 if less, 0.5 if tied."""
    pick = picks(to_candidates)
    return np.where(pick == 0.5, 0.5, (pick == answer) * 1.0)


def pair_credit(pa: PairAttention) -> np.ndarray:
    """[layer, head]: a head's mean credit over the two sentences of a pair."""
    if pa.answer_a is None or pa.answer_b is None:
        raise CorefInputError("Scoring heads needs the right answer for both sentences.")
    return (
        sentence_credit(pa.to_candidates_a, pa.answer_a) + sentence_credit(pa.to_candidates_b, pa.answer_b)
    ) / 2


def pair_margin(pa: PairAttention) -> np.ndarray:
    """[layer, head]: attention to the right candidate minus the wrong one, mean over A and B."""
    sign_a = 1.0 if pa.answer_a == 0 else -1.0
    sign_b = 1.0 if pa.answer_b == 0 else -1.0
    return (sign_a * pa.lean_a + sign_b * pa.lean_b) / 2


def split_pairs(
    n_pairs: int, test_fraction: float = 0.3, seed: int = 0
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Seeded split of pair indices into (choosing, held-out test); both halves of a pair stay together."""
    if n_pairs < 2:
        raise CorefInputError("Scoring heads needs at least two pairs: one to choose, one to test.")
    n_test = min(max(1, round(n_pairs * test_fraction)), n_pairs - 1)
    order = np.random.default_rng(seed).permutation(n_pairs)
    return tuple(sorted(int(i) for i in order[n_test:])), tuple(sorted(int(i) for i in order[:n_test]))


def coin_flip_band(n_sentences: int, level: float = 0.95) -> tuple[float, float]:
    """Accuracy range a coin flip reaches with probability `level` on n sentences (binomial)."""
    pmf = [math.comb(n_sentences, k) / 2**n_sentences for k in range(n_sentences + 1)]
    cdf = np.cumsum(pmf)
    tail = (1 - level) / 2
    low = int(np.searchsorted(cdf, tail))
    high = int(np.searchsorted(cdf, 1 - tail))
    return low / n_sentences, high / n_sentences


@dataclass(frozen=True, eq=False)
class HeadScores:
    """How often each head attends more to the right candidate, chosen on one split, tested on another."""

    choose_pairs: tuple[int, ...]
    test_pairs: tuple[int, ...]
    choose_accuracy: np.ndarray  # float [layer, head], on the choosing pairs
    test_accuracy: np.ndarray  # float [layer, head], on the held-out pairs
    choose_margin: np.ndarray  # float [layer, head]: mean right-minus-wrong attention, choosing
    best_head: tuple[int, int]  # chosen on the choosing pairs only
    chance: float = CHANCE

    @property
    def best_test_accuracy(self) -> float:
        """Held-out accuracy of the head chosen on the choosing pairs."""
        return float(self.test_accuracy[self.best_head])

    @property
    def n_test_sentences(self) -> int:
        return 2 * len(self.test_pairs)

    @property
    def coin_flip_band(self) -> tuple[float, float]:
        """95% range of a coin flip's accuracy on the held-out sentences."""
        return coin_flip_band(self.n_test_sentences)

    def ranked_heads(self, top: int = 15) -> list[tuple[int, int]]:
        """Heads by choosing accuracy, ties broken by margin, best first."""
        order = np.lexsort((-self.choose_margin.ravel(), -self.choose_accuracy.ravel()))
        n_heads = self.choose_accuracy.shape[1]
        return [(int(i) // n_heads, int(i) % n_heads) for i in order[:top]]


def score_heads(
    pair_attentions: Sequence[PairAttention], test_fraction: float = 0.3, seed: int = 0
) -> HeadScores:
    """Score every head on a seeded choosing split and report it on the held-out split."""
    choose, test = split_pairs(len(pair_attentions), test_fraction, seed)
    credit = np.stack([pair_credit(pa) for pa in pair_attentions])  # [pair, L, H]
    margin = np.stack([pair_margin(pa) for pa in pair_attentions])  # [pair, L, H]
    choose_accuracy = credit[list(choose)].mean(axis=0)
    choose_margin = margin[list(choose)].mean(axis=0)
    # Best = highest choosing accuracy; ties (common) go to the head with the larger margin.
    order = np.lexsort((-choose_margin.ravel(), -choose_accuracy.ravel()))
    best = np.unravel_index(int(order[0]), choose_accuracy.shape)
    return HeadScores(
        choose_pairs=choose,
        test_pairs=test,
        choose_accuracy=choose_accuracy,
        test_accuracy=credit[list(test)].mean(axis=0),
        choose_margin=choose_margin,
        best_head=(int(best[0]), int(best[1])),
    )


# --- running a model on pairs -----------------------------------------------------------------

QUERIES = ("pronoun", "end")  # read attention from the pronoun, or from the last token


@dataclass(frozen=True, eq=False)
class PairTrace:
    """A model's attention on both sentences of a pair, with the marked tokens and what to know."""

    pair: CorefPair
    trace_a: AttentionTrace
    trace_b: AttentionTrace
    spans_a: TokenSpans
    spans_b: TokenSpans
    attention: PairAttention
    notes: tuple[str, ...] = ()  # what the view cannot show, in words for the user


def _query_span(special: Sequence[bool], spans: TokenSpans, query: str) -> TokenSpans:
    """Spans with the query row moved to the last non-special token when query is 'end'."""
    if query == "pronoun":
        return spans
    if query != "end":
        raise CorefInputError(f"Attention can be read from {' or '.join(QUERIES)}, not '{query}'.")
    last = max(i for i, flag in enumerate(special) if not flag)
    return TokenSpans((last,), spans.candidates)


def decoder_notes(pair: CorefPair, spans: TokenSpans, query: str) -> tuple[str, ...]:
    """Why a decoder's pronoun can miss a candidate or the changed word (explained, not an error)."""
    notes = []
    names = pair.candidate_texts
    for i in hidden_candidates(spans, causal=True):
        notes.append(
            f"'{names[i]}' comes after the {query_name(query)}: in a decoder each token attends only "
            "to itself and earlier tokens, so its attention to "
            f"'{names[i]}' is 0 by construction, not by choice."
        )
    changed = pair.changed_words
    if query == "pronoun" and changed and changed[0] > pair.pronoun:
        a, b = pair.words_a[changed[0]].text, pair.words_b[changed[0]].text
        notes.append(
            f"The word that changes ('{a}' / '{b}') comes after the pronoun, which a decoder's "
            "pronoun cannot see: its attention row is the same in A and B, the difference grid is "
            "zero, and no head can beat chance from the pronoun. Read attention from the end of "
            "the sentence to see where the model looks once it has read the changed word."
        )
    return tuple(notes)


def query_name(query: str) -> str:
    return "pronoun" if query == "pronoun" else "last token"


def _encoded(loaded: LoadedModel, sentence: str):
    """The sentence as trace_text tokenises it, with character offsets, or a clear message."""
    from txviz.tracing import encode

    try:
        return encode(loaded, sentence)
    except NotImplementedError as error:  # slow (Python) tokenizers keep no character offsets
        raise CorefInputError(
            f"{loaded.name}'s tokenizer gives no character offsets, so words cannot be matched to "
            "its tokens. Choose a model with a fast tokenizer."
        ) from error


def _offsets(loaded: LoadedModel, sentence: str) -> list[tuple[int, int]]:
    return _encoded(loaded, sentence).offsets


def trace_pair(loaded: LoadedModel, pair: CorefPair, query: str = "pronoun") -> PairTrace:
    """Run the model on both sentences and measure attention from the pronoun to each candidate."""
    from txviz.tracing import trace_text

    traces, spans = [], []
    for sentence in (pair.sentence_a, pair.sentence_b):
        offsets = _offsets(loaded, sentence)
        trace = trace_text(loaded, sentence)
        marked = token_spans(sentence, offsets, pair.pronoun, pair.candidates)
        traces.append(trace)
        spans.append(_query_span(trace.special or (False,) * len(trace.query_tokens), marked, query))
    causal = trace.kind == "causal"
    notes = decoder_notes(pair, spans[0], query) if causal else ()
    attention = pair_attention(traces[0].weights, traces[1].weights, spans[0], spans[1], pair, causal)
    return PairTrace(pair, traces[0], traces[1], spans[0], spans[1], attention, notes)


def batched_weights(loaded: LoadedModel, id_lists: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """Attention of every layer and head for several texts in one padded forward pass.

    Padding is on the right and masked, so each text's [layer, head, T, T] block equals its own
    unpadded run (to float rounding); one batch is far cheaper than many small runs on a CPU.
    """
    import torch

    from txviz.capture import CaptureSettings, capture

    width = max(map(len, id_lists))
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([list(s) + [pad] * (width - len(s)) for s in id_lists], device=loaded.device)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in id_lists], device=loaded.device)
    with torch.no_grad(), capture(loaded.model, CaptureSettings(record={"weights"})) as rec:
        loaded.model(input_ids=ids, attention_mask=mask)
    stacked = np.stack([r[-1].weights.numpy() for r in rec.records.values()], axis=1)  # (B, L, H, T, T)
    return [stacked[b, :, :, : len(s), : len(s)] for b, s in enumerate(id_lists)]


def attention_over_pairs(
    loaded: LoadedModel,
    pairs: Sequence[CorefPair],
    query: str = "pronoun",
    progress: Callable[[int, int], None] | None = None,
    batch_pairs: int = 8,
) -> list[PairAttention]:
    """Pronoun-to-candidate attention of every head for every pair, a few pairs per model run."""
    from txviz.tokens import special_flags

    out = []
    for first in range(0, len(pairs), batch_pairs):
        chunk = pairs[first : first + batch_pairs]
        sentences = [s for pair in chunk for s in (pair.sentence_a, pair.sentence_b)]
        encoded = [_encoded(loaded, s) for s in sentences]
        weights = batched_weights(loaded, [e.ids for e in encoded])
        for i, pair in enumerate(chunk):
            spans = []
            for j in (2 * i, 2 * i + 1):
                marked = token_spans(sentences[j], encoded[j].offsets, pair.pronoun, pair.candidates)
                spans.append(_query_span(special_flags(loaded.tokenizer, encoded[j].ids), marked, query))
            out.append(pair_attention(weights[2 * i], weights[2 * i + 1], *spans, pair, loaded.is_causal))
        if progress:
            progress(len(out), len(pairs))
    return out


# --- the model's own answer -------------------------------------------------------------------


ANSWER_METHODS = ("substitution", "question")


@dataclass(frozen=True)
class ModelAnswer:
    """What a language model prefers for the pronoun: a log-probability score per candidate."""

    sentence: str
    candidates: tuple[str, str]
    log_probs: tuple[float, float]  # the method's log-probability score of each candidate
    method: str = "substitution"

    @property
    def probabilities(self) -> tuple[float, float]:
        """The two scores renormalised over the two candidates."""
        top = max(self.log_probs)
        e = [math.exp(lp - top) for lp in self.log_probs]
        return (e[0] / sum(e), e[1] / sum(e))

    @property
    def choice(self) -> int:
        return int(self.log_probs[1] > self.log_probs[0])


def answer_question(sentence: str, pronoun: str, first: str, second: str) -> str:
    """The question put to the model, naming the candidates in the given order."""
    return (
        f'Sentence: "{sentence}"\n'
        f'In this sentence, what does "{pronoun}" refer to: "{first}" or "{second}"? '
        "Answer with one word."
    )


def _prompt_ids(tokenizer, question: str) -> list[int]:
    """The question as one user turn (chat template where the model has one), ready to answer."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": question}]
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    return list(tokenizer(question + "\nAnswer:")["input_ids"])


def continuation_log_probs(
    loaded: LoadedModel, sequences: Sequence[Sequence[int]], starts: Sequence[int]
) -> list[float]:
    """Per sequence, the summed log-probability of its tokens from position `start` on (one batch)."""
    import torch

    width = max(map(len, sequences))
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([list(s) + [pad] * (width - len(s)) for s in sequences], device=loaded.device)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sequences], device=loaded.device)
    with torch.no_grad():
        logits = loaded.model(input_ids=ids, attention_mask=mask).logits  # (N, T, vocab)
    logp = torch.log_softmax(logits.float(), dim=-1).cpu()
    # the token at position t is predicted by the logits at t - 1
    return [
        sum(float(logp[row, t - 1, seq[t]]) for t in range(max(start, 1), len(seq)))
        for row, (seq, start) in enumerate(zip(sequences, starts, strict=True))
    ]


def substituted(sentence: str, pronoun: int, candidate: str) -> tuple[str, int]:
    """The sentence with the pronoun replaced by the candidate, and where the rest begins (chars)."""
    word = split_words(sentence)[pronoun]
    phrase = candidate if candidate[:1].isupper() else f"the {candidate}"  # names take no article
    return sentence[: word.start] + phrase + sentence[word.end :], word.start + len(phrase)


def _question_scores(loaded: LoadedModel, pair: CorefPair, sentence: str) -> tuple[float, float]:
    """Log-probability of each candidate as the answer to the question, mean over both orders."""
    tok, names = loaded.tokenizer, pair.candidate_texts
    sequences, starts = [], []
    for first, second in (names, names[::-1]):
        prompt = _prompt_ids(tok, answer_question(sentence, pair.pronoun_text, first, second))
        for name in names:
            sequences.append(prompt + list(tok(name, add_special_tokens=False)["input_ids"]))
            starts.append(len(prompt))
    totals = continuation_log_probs(loaded, sequences, starts)
    # rows: (order 1, cand 0), (order 1, cand 1), (order 2, cand 0), (order 2, cand 1)
    return ((totals[0] + totals[2]) / 2, (totals[1] + totals[3]) / 2)


def _substitution_scores(loaded: LoadedModel, pair: CorefPair, sentence: str) -> tuple[float, float]:
    """Log-probability of the words after the pronoun once the pronoun is replaced by each candidate."""
    sequences, starts = [], []
    for name in pair.candidate_texts:
        text, rest = substituted(sentence, pair.pronoun, name)
        enc = loaded.tokenizer(text, return_offsets_mapping=True)
        ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
        # score only the shared continuation, so both candidates are judged on the same tokens
        first = next(i for i, (s, e) in enumerate(offsets) if e > s and e > rest)
        sequences.append(ids)
        starts.append(first)
    totals = continuation_log_probs(loaded, sequences, starts)
    return (totals[0], totals[1])


def model_answer(
    loaded: LoadedModel, pair: CorefPair, sentence: str, method: str = "substitution"
) -> ModelAnswer:
    """What a decoder prefers for the pronoun in one sentence of the pair."""
    if not loaded.is_causal:
        raise CorefInputError(
            f"{loaded.name} is an {loaded.kind} model with no next-word head: it cannot be asked."
        )
    if method not in ANSWER_METHODS:
        raise CorefInputError(f"Ask the model by {' or '.join(ANSWER_METHODS)}, not '{method}'.")
    score = _substitution_scores if method == "substitution" else _question_scores
    return ModelAnswer(sentence, pair.candidate_texts, score(loaded, pair, sentence), method)


def answers_over_pairs(
    loaded: LoadedModel,
    pairs: Sequence[CorefPair],
    method: str = "substitution",
    progress: Callable[[int, int], None] | None = None,
) -> list[tuple[ModelAnswer, ModelAnswer]]:
    """The model's answer for sentence A and B of every pair."""
    out = []
    for i, pair in enumerate(pairs):
        out.append(
            (
                model_answer(loaded, pair, pair.sentence_a, method),
                model_answer(loaded, pair, pair.sentence_b, method),
            )
        )
        if progress:
            progress(i + 1, len(pairs))
    return out


@dataclass(frozen=True)
class Verdict:
    """One sentence: the right candidate, the one a head attends to more, the one the model says."""

    pair_index: int
    sentence: str  # "A" or "B"
    right: str
    attention_pick: str  # "tie" when the head weighs both the same
    model_pick: str

    @property
    def disagree(self) -> bool:
        return self.attention_pick != self.model_pick

    def describe(self, head: tuple[int, int]) -> str:
        """One line of markdown: what the model prefers and where the head looks."""
        looks = "both the same" if self.attention_pick == "tie" else f"**{self.attention_pick}**"
        agreement = " (they disagree)" if self.disagree else ""
        marked = "" if self.right == "?" else f" ({'right' if self.model_pick == self.right else 'wrong'})"
        return (
            f"the model prefers **{self.model_pick}**{marked}; head L{head[0]} H{head[1]} looks more at "
            f"{looks}{agreement}."
        )


def head_readings(pa: PairAttention, head: tuple[int, int]) -> list[str]:
    """Per sentence, one line of markdown: the candidate one head looks at more, against the answer."""
    lines = []
    for name, shares, right in pa.sentences:
        pick = pa.head_pick(shares, head)
        looks = "both candidates the same" if pick is None else f"**{pa.candidates[pick]}**"
        if right is None:
            verdict = "no right answer marked"
        else:
            means = f"the pronoun means {pa.candidates[right]}"
            verdict = (
                f"a tie; {means}" if pick is None else f"{'right' if pick == right else 'wrong'}: {means}"
            )
        lines.append(f"Sentence {name}: head L{head[0]} H{head[1]} looks more at {looks} ({verdict}).")
    return lines


def verdicts(
    pair_attentions: Sequence[PairAttention],
    answers: Sequence[tuple[ModelAnswer, ModelAnswer]],
    head: tuple[int, int],
) -> list[Verdict]:
    """Per sentence, what one head's attention and the model's answer pick."""
    out = []
    for i, (pa, pair_answers) in enumerate(zip(pair_attentions, answers, strict=True)):
        for (name, shares, right), answer in zip(pa.sentences, pair_answers, strict=True):
            pick = pa.head_pick(shares, head)
            out.append(
                Verdict(
                    pair_index=i,
                    sentence=name,
                    right=pa.candidates[right] if right is not None else "?",
                    attention_pick="tie" if pick is None else pa.candidates[pick],
                    model_pick=pa.candidates[answer.choice],
                )
            )
    return out


@dataclass(frozen=True)
class SetComparison:
    """One head's attention against the model's answer over the whole set of pairs."""

    head: tuple[int, int]
    head_accuracy: float  # share of sentences where the head attends more to the right one
    model_accuracy: float  # share of sentences the model answers right
    agreement: float  # share of sentences where the head's pick equals the model's
    rows: tuple[dict, ...]  # the sentences where they disagree, for a table

    @property
    def sentence(self) -> str:
        layer, head = self.head
        return (
            f"Over the set, the model answers {self.model_accuracy:.0%} of sentences right and head "
            f"L{layer} H{head} looks more at the right candidate in {self.head_accuracy:.0%}; "
            f"they pick the same candidate in {self.agreement:.0%} of sentences."
        )


def compare_over_set(
    pair_attentions: Sequence[PairAttention],
    answers: Sequence[tuple[ModelAnswer, ModelAnswer]],
    head: tuple[int, int],
) -> SetComparison:
    """Where a head's attention and the model's answer agree, and where they disagree."""
    found = verdicts(pair_attentions, answers, head)
    texts = [(a.sentence, b.sentence) for a, b in answers]
    rows = tuple(
        {
            "pair": v.pair_index + 1,
            "sentence": texts[v.pair_index][v.sentence == "B"],
            "right": v.right,
            "model says": v.model_pick,
            "head looks at": v.attention_pick,
        }
        for v in found
        if v.disagree
    )
    return SetComparison(
        head=head,
        # a tie is half right, as in score_heads
        head_accuracy=float(
            np.mean([0.5 if v.attention_pick == "tie" else v.attention_pick == v.right for v in found])
        ),
        model_accuracy=float(np.mean([v.model_pick == v.right for v in found])),
        agreement=float(np.mean([not v.disagree for v in found])),
        rows=rows,
    )
