"""The RNN's hierarchy problem (CS60010): "car", "blue car", "into the blue car" are phrases inside
phrases, while an RNN reads one flat chain of words. Does a trained transformer's attention group a
nested phrase, or only look at near tokens?

For every layer and head the attention rows are kept over the content tokens (special tokens, and a
decoder's first token, its attention sink, are dropped; each row renormalised). A phrase's grouping is
the mean over its tokens of the weight each gives to the phrase's tokens, itself included. The
flat-distance baseline is the attention that depends only on the offset j − i: for each offset, the
head's mean weight at that offset over the sentence, renormalised per row (a Toeplitz matrix fitted to
the same head). What the head gives the phrase beyond that baseline is grouping that distance alone
does not explain. As a control, the same measure on a span of as many tokens shifted one token to the
right, across the phrase's edge: a head that groups the phrase gives the phrase more than the shifted
span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from txviz.core import errors
from txviz.core.errors import UserError
from txviz.core.tracing import encode, trace_text


@dataclass(frozen=True)
class Example:
    """A sentence and its nested phrases, innermost first; each phrase lies inside the next."""

    text: str
    levels: tuple[str, ...]


EXAMPLES = (
    Example("She drove slowly into the blue car by the gate.", ("car", "blue car", "the blue car", "into the blue car")),
    Example(
        "The dog slept under the old wooden table all day.",
        ("table", "wooden table", "the old wooden table", "under the old wooden table"),
    ),
    Example(
        "They finally sold the small red house near the lake.",
        ("house", "red house", "the small red house", "sold the small red house"),
    ),
)  # fmt: skip


# A decoder's middle layers send most of every row to one early token (SmolLM2, layer 7: about 0.9 on the
# first "the" of "They finally sold the small red house"), so any phrase that holds it looks grouped: the
# page measures encoders. measure() itself takes causal rows too.
ENCODERS = ("encoder",)
DECODER_NOTE = (
    "Encoders only: a decoder's middle layers send most of every row to one early token (SmolLM2's layer 7 "
    "gives about 0.9 of each row to the first 'the' of 'They finally sold the small red house'), a sink "
    "that makes any phrase holding it look grouped."
)


class HierarchyError(UserError):
    """A phrase that is not where the example says, with a message fit for the user."""


def phrase_chars(text: str, levels: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """Character span of each level, innermost first: the outermost is found in the text, each inner
    one inside the next (its last occurrence: English phrases end in their head word)."""
    spans: list[tuple[int, int]] = []
    start = text.find(levels[-1])
    if start < 0:
        raise HierarchyError(f"{levels[-1]!r} is not in {text!r}.")
    outer = (start, start + len(levels[-1]))
    spans.append(outer)
    for level in reversed(levels[:-1]):
        found = text.rfind(level, outer[0], outer[1])
        if found < 0:
            raise HierarchyError(f"{level!r} is not inside {text[outer[0] : outer[1]]!r}.")
        outer = (found, found + len(level))
        spans.append(outer)
    return tuple(reversed(spans))


def token_positions(offsets: Sequence[tuple[int, int]], chars: tuple[int, int]) -> tuple[int, ...]:
    """Tokens whose characters overlap ``chars`` (special tokens have empty offsets: none)."""
    lo, hi = chars
    return tuple(i for i, (s, e) in enumerate(offsets) if e > s and s < hi and e > lo)


def content_attention(weights: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """[L, H, Q, K] weights cut to the kept tokens (rows and columns), each row renormalised to sum to 1
    (a row with no kept weight stays zero)."""
    cut = weights[:, :, keep][:, :, :, keep].astype(np.float64)
    sums = cut.sum(axis=-1, keepdims=True)
    return np.divide(cut, sums, out=np.zeros_like(cut), where=sums > 0)


def valid_pairs(n: int, causal: bool) -> np.ndarray:
    """(n, n) bool: the keys a query may read (j <= i in a decoder, all in an encoder)."""
    return np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)


def distance_baseline(attention: np.ndarray, causal: bool) -> np.ndarray:
    """The flat-distance baseline of each head: B[i, j] ∝ mean weight of the head at offset j − i.

    attention: [..., n, n] rows over the content tokens. For each offset δ the profile is the mean of
    A[i, i + δ] over the rows where that key exists (and may be read); each row of B is the profile
    over that row's readable keys, renormalised. B is a Toeplitz matrix up to the row scale: it depends
    only on the distance, never on which words sit there.
    """
    n = attention.shape[-1]
    valid = valid_pairs(n, causal)
    offsets = np.arange(n)[None, :] - np.arange(n)[:, None]  # (n, n): j - i
    index = offsets + n - 1  # 0 .. 2n - 2
    flat = attention.reshape(-1, n * n)
    sums = np.zeros((flat.shape[0], 2 * n - 1))
    np.add.at(sums.T, index[valid], flat[:, valid.ravel()].T)
    counts = np.bincount(index[valid], minlength=2 * n - 1)
    profile = sums / np.maximum(counts, 1)  # (heads, offsets)
    baseline = np.where(valid, profile[:, index], 0.0).reshape(attention.shape)
    totals = baseline.sum(axis=-1, keepdims=True)
    return np.divide(baseline, totals, out=np.zeros_like(baseline), where=totals > 0)


def grouping(attention: np.ndarray, span: Sequence[int]) -> np.ndarray:
    """Mean over the span's tokens of the weight each gives the span (itself included): [...]."""
    rows = attention[..., list(span), :][..., list(span)]
    return rows.sum(axis=-1).mean(axis=-1)


def shifted(span: Sequence[int], n: int) -> tuple[int, ...]:
    """The same number of tokens one to the right (to the left at the sentence's end): across the edge."""
    step = 1 if max(span) + 1 < n else -1
    moved = tuple(i + step for i in span)
    return moved if min(moved) >= 0 else tuple(span)


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """Grouping of each nested phrase in every layer and head, against the flat-distance baseline."""

    model_name: str
    tokens: tuple[str, ...]  # the content tokens
    levels: tuple[str, ...]  # the phrases, innermost first
    spans: tuple[tuple[int, ...], ...]  # their content-token positions
    controls: tuple[tuple[int, ...], ...]  # each span shifted one token
    actual: np.ndarray  # [level, L, H]: weight the phrase's tokens give the phrase
    baseline: np.ndarray  # [level, L, H]: the same under the flat-distance baseline
    control: np.ndarray  # [level, L, H]: actual minus baseline on the shifted span

    @property
    def excess(self) -> np.ndarray:
        """[level, L, H]: grouping beyond what distance explains."""
        return self.actual - self.baseline

    @property
    def layer_excess(self) -> np.ndarray:
        """[level, L]: the excess, mean over heads."""
        return self.excess.mean(axis=-1)

    @property
    def layer_control(self) -> np.ndarray:
        """[level, L]: the shifted span's excess, mean over heads."""
        return self.control.mean(axis=-1)

    def grouping_layers(self, level: int) -> tuple[int, ...]:
        """Layers whose heads, on average, group the phrase beyond distance and beyond the shifted span."""
        mine, other = self.layer_excess[level], self.layer_control[level]
        return tuple(int(layer) for layer in np.flatnonzero((mine > 0) & (mine > other)))

    def rows(self) -> list[dict]:
        """One row per phrase: its strongest layer (mean over heads), that layer's best head, the control."""
        out = []
        for i, level in enumerate(self.levels):
            layer = int(np.argmax(self.layer_excess[i]))
            head = int(np.argmax(self.excess[i, layer]))
            out.append(
                {
                    "phrase": level,
                    "tokens": len(self.spans[i]),
                    "layers that group it": ", ".join(map(str, self.grouping_layers(i))) or "none",
                    "strongest layer": layer,
                    "excess there (mean of heads)": round(float(self.layer_excess[i, layer]), 3),
                    "shifted span's excess there": round(float(self.layer_control[i, layer]), 3),
                    "best head there": head,
                    "its weight on the phrase": round(float(self.actual[i, layer, head]), 3),
                    "distance baseline": round(float(self.baseline[i, layer, head]), 3),
                }
            )
        return out


def measure(
    weights: np.ndarray,
    offsets: Sequence[tuple[int, int]],
    special: Sequence[bool],
    tokens: Sequence[str],
    example: Example,
    causal: bool,
    model_name: str = "",
) -> Hierarchy:
    """The hierarchy measures from a [L, H, T, T] attention array and the tokens' character offsets."""
    keep = ~np.asarray(special, dtype=bool)
    if causal:
        keep[0] = False  # a decoder's first token is its attention sink: not a distance effect
    positions = np.flatnonzero(keep)
    where = {int(p): i for i, p in enumerate(positions)}
    spans = []
    for level, chars in zip(example.levels, phrase_chars(example.text, example.levels), strict=True):
        span = tuple(where[p] for p in token_positions(offsets, chars) if p in where)
        if not span:
            raise HierarchyError(f"{level!r} has no tokens the model reads (was the text cut short?).")
        spans.append(span)
    attention = content_attention(weights, keep)
    base = distance_baseline(attention, causal)
    n = len(positions)
    controls = tuple(shifted(span, n) for span in spans)
    actual = np.stack([grouping(attention, s) for s in spans])
    baseline = np.stack([grouping(base, s) for s in spans])
    control = np.stack([grouping(attention, s) - grouping(base, s) for s in controls])
    return Hierarchy(
        model_name,
        tuple(tokens[p] for p in positions),
        example.levels,
        tuple(spans),
        controls,
        actual,
        baseline,
        control,
    )


def hierarchy(loaded, example: Example) -> Hierarchy:
    """Run the model on the example's sentence and measure how its attention groups the nested phrases."""
    errors.require_kind(loaded, ENCODERS, "show how attention groups a phrase without a sink in the way")
    trace = trace_text(loaded, example.text)
    encoded = encode(loaded, example.text)
    return measure(
        trace.weights,
        encoded.offsets,
        trace.special,
        trace.query_tokens,
        example,
        loaded.is_causal,
        loaded.name,
    )
