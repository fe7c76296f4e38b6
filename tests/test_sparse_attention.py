"""FlexAttention with a block mask equals dense masked attention; the benchmark runs and reports."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.bench import masks as bench
from txviz.bench.measure import measure
from txviz.masks import patterns as masks
from txviz.masks import sparse as sa

N = 300  # three 128-token blocks, the last one partial: full, partial and empty tiles all occur

PATTERNS = {
    "causal": masks.causal_mask(N),
    "local": masks.local_window_mask(N, 20),
    "dilated": masks.dilated_mask(N, 10, 3, causal=True),
    "strided": masks.strided_mask(N, 17),
    "block": masks.block_local_mask(N, 3),
    "global": masks.global_tokens_mask(N, 5, 8),
    "bigbird": masks.bigbird_mask(N, 8, 4, 3, seed=1),
    "prefix_lm": masks.prefix_lm_mask(N, 50),
    "padding": masks.ensure_attendable(masks.padding_mask(N, 200)).mask,  # rows fixed to themselves
}


def mask_mod_values(block_mask, n_query: int, n_key: int) -> np.ndarray:
    """The block mask's mask_mod evaluated at every (query, key) pair."""
    q = torch.arange(n_query)[:, None]
    k = torch.arange(n_key)[None, :]
    return block_mask.mask_mod(0, 0, q, k).numpy()


@pytest.mark.parametrize("key", list(PATTERNS))
def test_block_mask_holds_exactly_the_mask(key):
    mask = PATTERNS[key]
    block_mask = sa.block_mask_from_dense(mask)
    np.testing.assert_array_equal(mask_mod_values(block_mask, N, N), mask)
    # Block level: a tile is visited iff it holds an allowed pair (definition written out).
    tiles = np.zeros((3, 3), dtype=bool)
    for qb in range(3):
        for kb in range(3):
            tiles[qb, kb] = mask[qb * 128 : (qb + 1) * 128, kb * 128 : (kb + 1) * 128].any()
    visited = block_mask.to_dense()[0, 0].numpy().astype(bool)
    np.testing.assert_array_equal(visited, tiles)
    assert sa.tiles_computed(block_mask) == pytest.approx(tiles.mean())


def test_flex_attention_equals_dense_masked_attention():
    q, k, v = sa.random_qkv(N, bench.N_HEADS, bench.D_HEAD, seed=7)  # the benchmark's shapes: one compile
    with torch.no_grad():
        for key, mask in PATTERNS.items():
            dense = sa.dense_attention(q, k, v, sa.as_bool_tensor(mask))
            sparse = sa.sparse_attention(q, k, v, sa.block_mask_from_dense(mask))
            assert sparse.shape == dense.shape == (1, bench.N_HEADS, N, bench.D_HEAD)
            torch.testing.assert_close(sparse, dense, atol=1e-4, rtol=1e-4, msg=key)
            # By definition: softmax over the allowed keys of q . k / sqrt(d), times v.
            scores = (q[0, 0] @ k[0, 0].T) / bench.D_HEAD**0.5
            weights = torch.softmax(scores.masked_fill(~torch.as_tensor(mask), float("-inf")), -1)
            torch.testing.assert_close(sparse[0, 0], weights @ v[0, 0], atol=1e-4, rtol=1e-4, msg=key)


def test_different_masks_give_different_outputs():
    q, k, v = sa.random_qkv(N, bench.N_HEADS, bench.D_HEAD)
    with torch.no_grad():
        local = sa.sparse_attention(q, k, v, sa.block_mask_from_dense(PATTERNS["local"]))
        causal = sa.sparse_attention(q, k, v, sa.block_mask_from_dense(PATTERNS["causal"]))
    assert (local - causal).abs().max() > 0.1


def test_measure_reports_time_and_memory():
    result = measure(lambda: torch.ones(512, 1024).sum(), repeats=2)
    assert result.seconds > 0 and result.cpu_seconds >= 0
    assert result.peak_bytes is None or result.peak_bytes >= 0


def test_benchmark_runs_and_its_outputs_agree(capsys):
    assert bench.main(["--sizes", "256", "--patterns", "block", "causal", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "Block-local" in out and "speedup" in out
    rows = bench.run_benchmark([256], [p for p in bench.BENCH_PATTERNS if p.key == "block"], repeats=1)
    (row,) = rows
    assert row.n == 256 and row.tiles_computed == 0.5 and row.fraction_kept == 0.5
    assert row.max_abs_difference < 1e-4 and row.speedup > 0
    with pytest.raises(ValueError, match="multiples of 128"):
        bench.run_benchmark([300])


def test_saved_benchmark_covers_every_pattern_and_size():
    saved = bench.load_saved()
    assert saved is not None and saved["block_size"] == sa.BLOCK_SIZE
    for pattern in bench.BENCH_PATTERNS:
        rows = bench.saved_rows(pattern.key, saved)
        assert {1024, 4096, 8192} <= {r.n for r in rows}, pattern.key
        assert all(r.max_abs_difference < 1e-4 for r in rows)
        # What the benchmark measured matches the mask it claims to have used.
        n = rows[0].n
        assert rows[0].fraction_kept == pytest.approx(masks.fraction_kept(pattern.build(n)))
    table = bench.summary_rows(bench.saved_rows("local", saved))
    assert table[-1]["n"] == "8,192" and table[-1]["speed-up"].endswith("×")
