"""The explicit route and the fold give the same attention weights on every mask kind txviz applies.

The kinds are enumerated from the code: the model's own masks on every family of the zoo
(txviz.families.zoo: bidirectional, causal, padded, sliding windows, cross-attention), every pattern
of the Masking Patterns page (txviz.masks.patterns) as an extra mask, knockouts, and the mask forms
a call can carry without a model (additive masks, a window without a mask).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tiny_models import VOCAB, tiny_model

from txviz.core import routes
from txviz.core.capture import CaptureSettings, Reduction, use_capture
from txviz.core.edits import Knockout
from txviz.core.running import run
from txviz.families import zoo
from txviz.masks import patterns

N = 11  # tokens
CHUNK = 4  # queries per block: 11 tokens leave a short last block
TEXT = [f for f in zoo.FAMILIES if f.kind != "vision"]


def collect(state, block):
    """A fold that keeps every block (only a test on a tiny model may keep whole maps)."""
    return [*(state or []), (block.first, block.weights.clone())]


def stitched(blocks, n_key: int) -> torch.Tensor:
    """The fold's blocks as one (B, H, Q, K) map; keys a causal block never read are zeros."""
    return torch.cat([torch.nn.functional.pad(w, (0, n_key - w.shape[-1])) for _, w in blocks], dim=2)


def both_routes(model, settings: CaptureSettings, **inputs):
    """One run on the explicit route (weights recorded) and one on the fold (blocks kept)."""
    explicit = run(model, replace(settings, record=frozenset({"weights"})), **inputs)
    folded = run(model, replace(settings, reduction=Reduction(collect, chunk=CHUNK)), **inputs)
    return explicit, folded


def assert_same_weights(explicit, folded) -> None:
    """Every call of every attention module: the fold's stitched blocks equal the explicit weights."""
    assert list(folded.attention) == list(explicit.attention) != []
    for name, calls in explicit.attention.items():
        assert len(folded.attention[name]) == len(calls)
        for whole, blocks in zip(calls, folded.attention[name], strict=True):
            torch.testing.assert_close(stitched(blocks.reduced, whole.weights.shape[-1]), whole.weights)


def text_inputs(family_kind: str, padded: bool) -> dict:
    """Two texts of N tokens, the first left-padded by 3 and the second right-padded by 2 when asked;
    an encoder-decoder gets 13 decoder tokens (more queries than the source's keys)."""
    torch.manual_seed(1)
    inputs = {"input_ids": torch.randint(7, VOCAB, (2, N))}
    if padded:
        mask = torch.ones(2, N, dtype=torch.long)
        mask[0, :3], mask[1, -2:] = 0, 0
        inputs["attention_mask"] = mask
    if family_kind == "encoder-decoder":
        inputs["decoder_input_ids"] = torch.randint(7, VOCAB, (2, N + 2))
    return inputs


@pytest.mark.parametrize(
    ("family", "padded"),
    [(f, False) for f in zoo.FAMILIES] + [(f, True) for f in TEXT],
    ids=lambda v: v.name if isinstance(v, zoo.Family) else ("padded" if v else "unpadded"),
)
def test_each_model_mask_gives_the_same_weights_on_both_routes(family, padded):
    model = use_capture(zoo.build(family))
    if family.kind == "vision":
        inputs = {"pixel_values": torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))}
    else:
        inputs = text_inputs(family.kind, padded)
    try:
        explicit, folded = both_routes(model, CaptureSettings(), **inputs)
    except routes.UnsupportedAttention as refused:  # soft-capping, sinks, a position bias
        pytest.skip(f"the fold refuses {family.name}, as the app does: {refused}")
    if not folded.attention:  # Falcon, GPT-J, Bloom, MPNet, DeBERTa-v2: read eagerly by txviz
        pytest.skip(f"{family.name}'s own attention never calls the capture function: no route is taken")
    assert_same_weights(explicit, folded)


SQUARE = [key for key, pattern in patterns.PATTERNS.items() if pattern.square]


@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "padded"])
@pytest.mark.parametrize("family", ["bert", "llama"])
@pytest.mark.parametrize("pattern", [*SQUARE, "function"])
def test_each_extra_mask_gives_the_same_weights_on_both_routes(pattern, family, padded):
    """Raw patterns, not the page's attendable ones: a causal model then has rows with no key at all."""
    if pattern == "function":
        extra = lambda q, k: (q - k).abs() <= 2  # noqa: E731  (the MaskFn form of an extra mask)
    else:
        extra = torch.as_tensor(patterns.PATTERNS[pattern].mask(N))
    inputs = text_inputs("encoder", padded)
    assert_same_weights(*both_routes(tiny_model(family), CaptureSettings(extra_mask=extra), **inputs))


KNOCKOUTS = {
    "every head": Knockout(edges=[(0, 0), (5, 2), (9, 9), (3, 7)], layers=[0, 1]),
    "some heads": Knockout(edges=[(4, 4), (6, 1)], layers=[1], heads=[1, 3]),
    "one batch row": Knockout(edges=[(2, 2), (8, 0)], layers=[0], rows=[1]),
}


@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "padded"])
@pytest.mark.parametrize("family", ["bert", "llama"])
@pytest.mark.parametrize("knockout", list(KNOCKOUTS))
def test_each_knockout_gives_the_same_weights_on_both_routes(knockout, family, padded):
    settings = CaptureSettings(interventions=[KNOCKOUTS[knockout]])
    assert_same_weights(*both_routes(tiny_model(family), settings, **text_inputs("encoder", padded)))


def _call(mask, causal: bool, n_query: int = N, **kwargs) -> routes.Call:
    """A call of 2 x 4 query heads over 2 key heads and N keys, queries the last n_query of them."""
    generator = torch.Generator().manual_seed(2)
    q = torch.randn(2, 4, n_query, 8, generator=generator)
    k, v = (torch.randn(2, 2, N, 8, generator=generator) for _ in range(2))
    return routes.Call(torch.nn.Module(), q, k, v, mask, 0.0, None, causal, CaptureSettings(), None, kwargs)


def _additive(dtype) -> torch.Tensor:
    """(2, 1, N, N): a finite bias everywhere, the dtype's minimum on padded keys and future ones."""
    bias = torch.randn(2, 1, N, N, generator=torch.Generator().manual_seed(3))
    blocked = torch.ones(N, N, dtype=torch.bool).triu(1) | (torch.arange(N) >= N - 3)
    return bias.masked_fill(blocked, torch.finfo(dtype).min).to(dtype)


CALLS = {
    "additive float32 mask": lambda: _call(_additive(torch.float32), causal=True),
    "additive float16 mask": lambda: _call(_additive(torch.float16), causal=True),
    "additive mask, cached queries": lambda: _call(_additive(torch.float32)[:, :, -3:], True, n_query=3),
    "causal, cached queries": lambda: _call(None, causal=True, n_query=3),
    "sliding window without a mask": lambda: _call(None, causal=True, sliding_window=3),
    "window without a mask, cached queries": lambda: _call(None, True, n_query=3, sliding_window=3),
}


@pytest.mark.parametrize("kind", list(CALLS))
def test_mask_forms_no_tiny_model_passes_give_the_same_weights_on_both_routes(kind):
    """The fold is handed the call directly: ``plan`` refuses it a window without a mask, but the
    rule is the same one, and a later change to ``plan`` must find it right."""
    call = CALLS[kind]()
    weights = routes.explicit(call)[1]
    blocks = routes.fold(call, Reduction(collect, chunk=CHUNK))[1]
    torch.testing.assert_close(stitched(blocks, N), weights)
    assert weights.isfinite().all()
