"""The same mask two ways: dense masked SDPA, and FlexAttention that skips empty blocks.

FlexAttention (torch.nn.attention.flex_attention) takes a BlockMask: which (query block, key
block) tiles hold any allowed pair. Tiles with none are never computed, which is where a sparse
pattern saves time. Any boolean mask becomes a BlockMask here, with one `mask_mod` that looks the
pair up in the mask itself inside partial tiles; so every pattern shares one compiled kernel per
length (compiling takes seconds to tens of seconds on CPU; a kernel per pattern would multiply
that). The lookup table is the n x n boolean mask (n^2 bytes, built before the call); a pattern
written as a formula would not need it, at the price of one compile per pattern.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import BlockMask, flex_attention

from txviz.core.threads import torch_threads

BLOCK_SIZE = 128  # FlexAttention's default tile; one size keeps one compiled kernel


def as_bool_tensor(mask: np.ndarray | torch.Tensor) -> torch.Tensor:
    """A (query_pos, key_pos) mask as a CPU bool tensor."""
    return torch.as_tensor(np.asarray(mask, dtype=bool))


def dense_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Scaled dot-product attention over every pair, masked; q, k, v (B, H, T, d_head)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, Q, d_head)


def _tile_order(tiles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Count and indices of the True key blocks per query block, in BlockMask's layout."""
    counts = tiles.sum(dim=-1).to(torch.int32)  # (n_qb,)
    # Stable sort puts the live key blocks first, in increasing order.
    order = torch.argsort(tiles.to(torch.int8), dim=-1, descending=True, stable=True)
    return counts[None, None], order.to(torch.int32)[None, None]  # (1, 1, n_qb), (1, 1, n_qb, n_kb)


def block_mask_from_dense(mask: np.ndarray | torch.Tensor, block_size: int = BLOCK_SIZE) -> BlockMask:
    """A FlexAttention BlockMask equal to a boolean (query_pos, key_pos) mask."""
    mask = as_bool_tensor(mask)
    n_query, n_key = mask.shape
    n_qb, n_kb = -(-n_query // block_size), -(-n_key // block_size)
    padded = torch.zeros(n_qb * block_size, n_kb * block_size, dtype=torch.bool)
    padded[:n_query, :n_key] = mask
    # (n_qb, n_kb, block, block): one tile per pair of blocks
    tiles = padded.view(n_qb, block_size, n_kb, block_size).permute(0, 2, 1, 3)
    any_allowed = tiles.any(dim=-1).any(dim=-1)  # (n_qb, n_kb)
    full = tiles.all(dim=-1).all(dim=-1)
    partial = any_allowed & ~full

    def mask_mod(b, h, q_idx, kv_idx):  # noqa: ANN001, ANN202 (FlexAttention's signature)
        # Called only inside partial tiles; full tiles skip it and empty ones are never visited.
        return padded[q_idx, kv_idx]

    partial_counts, partial_order = _tile_order(partial)
    full_counts, full_order = _tile_order(full)
    return BlockMask.from_kv_blocks(
        partial_counts,
        partial_order,
        full_counts,
        full_order,
        BLOCK_SIZE=block_size,
        mask_mod=mask_mod,
        seq_lengths=(n_query, n_key),
    )


def tiles_computed(block_mask: BlockMask) -> float:
    """Share of (query block, key block) tiles the sparse kernel computes."""
    n_query, n_key = block_mask.seq_lengths
    n_qb, n_kb = -(-n_query // block_mask.BLOCK_SIZE[0]), -(-n_key // block_mask.BLOCK_SIZE[1])
    visited = block_mask.kv_num_blocks.sum() + block_mask.full_kv_num_blocks.sum()
    # BlockMask.sparsity() counts tiles of the padded length; this counts the real ones.
    return float(visited) / (n_qb * n_kb)


@functools.cache
def compiled_flex_attention() -> Callable[..., torch.Tensor]:
    """FlexAttention compiled for each length it meets (eager FlexAttention is for debugging only).

    Static shapes on purpose: with dynamic shapes, torch 2.13 on CPU can emit C++ for this kernel
    that does not build once the mask's tensors change size.
    """
    return torch.compile(flex_attention, dynamic=False)


def sparse_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask: BlockMask
) -> torch.Tensor:
    """Attention that computes only the tiles the block mask keeps; (B, H, Q, d_head).

    Always on one thread: the compiled kernel depends on the thread count, and recompiling it
    for another count (torch 2.13, CPU) can emit C++ that does not build.
    """
    with torch_threads(1):
        return compiled_flex_attention()(q, k, v, block_mask=block_mask)


def random_qkv(
    n: int, n_heads: int = 4, d_head: int = 64, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded random queries, keys and values, each (1, n_heads, n, d_head) float32."""
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, n_heads, n, d_head, generator=generator) for _ in range(3))
