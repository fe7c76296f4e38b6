"""Nested phrases on MiniLM: the measure from its own trace, recomputed here from the definition, and
what the tab's notice says (the two-word phrase is grouped beyond distance in nearly every layer, the
wider phrases in fewer)."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.core.errors import WrongModelKind
from txviz.core.tracing import encode, trace_text
from txviz.why import hierarchy as hy


@pytest.mark.parametrize("example", hy.EXAMPLES, ids=lambda e: e.levels[0])
def test_minilm_groups_the_two_word_phrase_beyond_distance(minilm, example):
    result = hy.hierarchy(minilm, example)
    trace = trace_text(minilm, example.text)
    offsets = encode(minilm, example.text).offsets
    content = [i for i, s in enumerate(trace.special) if not s]
    assert len(result.tokens) == len(content)
    # The two-word level by hand: its tokens' pieces located from the offsets, rows renormalised.
    start = example.text.rindex(
        example.levels[1], 0, example.text.index(example.levels[-1]) + len(example.levels[-1])
    )
    end = start + len(example.levels[1])
    span = [k for k, i in enumerate(content) if offsets[i][0] < end and offsets[i][1] > start]
    assert result.spans[1] == tuple(span)
    n = len(content)
    for layer in range(minilm.n_layers):
        a = trace.weights[layer][:, content][:, :, content].astype(np.float64)
        a /= a.sum(axis=-1, keepdims=True)
        excess = []
        for head in range(minilm.n_heads):
            profile = {
                d: np.mean([a[head, i, i + d] for i in range(n) if 0 <= i + d < n]) for d in range(-n + 1, n)
            }
            b = np.array([[profile[j - i] for j in range(n)] for i in range(n)])
            b /= b.sum(axis=1, keepdims=True)
            excess.append(np.mean([a[head, i, span].sum() - b[i, span].sum() for i in span]))
        assert result.layer_excess[1, layer] == pytest.approx(np.mean(excess), abs=1e-5)
    two_word = len(result.grouping_layers(1))
    assert two_word >= minilm.n_layers - 1
    assert all(len(result.grouping_layers(level)) < two_word for level in range(2, len(example.levels)))


def test_a_decoder_is_refused_with_a_reason(smollm2):
    with pytest.raises(WrongModelKind, match="sink"):
        hy.hierarchy(smollm2, hy.EXAMPLES[0])
