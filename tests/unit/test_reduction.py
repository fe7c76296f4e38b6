"""Streaming capture: attention folded block by block gives the plain forward's output and exact rows."""

import pytest
import torch
from tiny_models import tiny_model

from txviz.core.capture import CaptureSettings, Reduction
from txviz.core.running import run


def collect(state, block):
    """A fold that keeps every block (only a test on a tiny model may keep whole maps)."""
    return [*(state or []), (block.first, block.weights.clone())]


def stitched(blocks, n_key):
    """The kept blocks as one (B, H, Q, K) tensor, keys a causal block never saw as zeros."""
    rows = [torch.nn.functional.pad(w, (0, n_key - w.shape[-1])) for _, w in blocks]
    return torch.cat(rows, dim=2)


@pytest.mark.parametrize("family", ["llama", "gpt2", "bert"])
@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_reduced_blocks_give_the_plain_output_and_the_exact_weights(family, chunk):
    model = tiny_model(family)
    ids = torch.randint(0, 100, (1, 23))
    full = run(model, CaptureSettings(record={"weights"}), ("hidden",), input_ids=ids)
    reduced = run(
        model, CaptureSettings(reduction=Reduction(collect, chunk=chunk)), ("hidden",), input_ids=ids
    )
    torch.testing.assert_close(reduced.hidden, full.hidden, rtol=1e-5, atol=1e-5)
    assert list(reduced.attention) == list(full.attention)
    for name, calls in full.attention.items():
        torch.testing.assert_close(stitched(reduced.attention[name][0].reduced, 23), calls[0].weights)


def test_rows_and_modules_reduce_only_what_is_asked():
    model = tiny_model("llama")
    ids = torch.randint(0, 100, (1, 30))
    full = run(model, CaptureSettings(record={"weights"}), ("logits",), input_ids=ids)
    name = list(full.attention)[1]
    only = Reduction(collect, chunk=4, modules=frozenset({name}), rows=(9, 19))
    reduced = run(model, CaptureSettings(reduction=only), ("logits",), input_ids=ids)
    torch.testing.assert_close(reduced.logits, full.logits, rtol=1e-5, atol=1e-5)
    assert list(reduced.attention) == [name]
    blocks = reduced.attention[name][0].reduced
    assert [first for first, _ in blocks] == [9, 13, 17]
    torch.testing.assert_close(stitched(blocks, 30), full.attention[name][0].weights[:, :, 9:19])


def test_a_padded_batch_and_an_extra_mask_are_applied_block_by_block():
    model = tiny_model("bert")
    ids = torch.randint(0, 100, (1, 12))
    mask = torch.ones(1, 12, dtype=torch.long)
    mask[0, 9:] = 0
    local = CaptureSettings(record={"weights"}, extra_mask=lambda q, k: (q - k).abs() <= 3)
    full = run(model, local, ("hidden",), input_ids=ids, attention_mask=mask)
    settings = CaptureSettings(extra_mask=local.extra_mask, reduction=Reduction(collect, chunk=5))
    reduced = run(model, settings, ("hidden",), input_ids=ids, attention_mask=mask)
    torch.testing.assert_close(reduced.hidden, full.hidden, rtol=1e-5, atol=1e-5)
    for name, calls in full.attention.items():
        torch.testing.assert_close(stitched(reduced.attention[name][0].reduced, 12), calls[0].weights)
