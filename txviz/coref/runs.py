"""Running a model over minimal pairs: one pair traced, or every pair batched."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from txviz.core.trace import AttentionTrace

if TYPE_CHECKING:
    from txviz.models import LoadedModel
from txviz.coref.pairs import CorefInputError, CorefPair
from txviz.coref.spans import PairAttention, TokenSpans, hidden_candidates, pair_attention, token_spans

QUERIES = ("pronoun", "end")  # read attention from the pronoun, or from the last token
# A decoder's pronoun cannot see the words after it, and in most pairs the deciding word comes after
# the pronoun: read a decoder from the last token, which has seen the whole sentence.
DECODER_QUERY = "end"


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
    from txviz.core.tracing import encode

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
    from txviz.core.tracing import trace_text

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

    from txviz.core.capture import CaptureSettings
    from txviz.core.running import run

    width = max(map(len, id_lists))
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([list(s) + [pad] * (width - len(s)) for s in id_lists], device=loaded.device)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in id_lists], device=loaded.device)
    rec = run(loaded.model, CaptureSettings(record={"weights"}), input_ids=ids, attention_mask=mask)
    stacked = np.stack([rec.attention[n][-1].weights.numpy() for n in rec.names()], axis=1)  # (B, L, H, T, T)
    return [stacked[b, :, :, : len(s), : len(s)] for b, s in enumerate(id_lists)]


def attention_over_pairs(
    loaded: LoadedModel,
    pairs: Sequence[CorefPair],
    query: str = "pronoun",
    progress: Callable[[int, int], None] | None = None,
    batch_pairs: int = 8,
) -> list[PairAttention]:
    """Pronoun-to-candidate attention of every head for every pair, a few pairs per model run."""
    from txviz.core.tokens import special_flags

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
