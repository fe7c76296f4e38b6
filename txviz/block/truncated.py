"""Speech as a very long sequence: truncated (windowed) self-attention and its cost against full attention.

At 10 ms a frame, a minute of speech is 6,000 frames, and full self-attention scores every pair: T²
of them. Streaming recognisers truncate it: frame t attends only to frames t − left .. t + right (the
Transformer Transducer, Zhang et al. 2020, limits left and right context this way). A frame near the
start or the end has fewer neighbours, so the count is exact only with the edges taken off:

    pairs(T, l, r) = T (l + r + 1) − l (l + 1) / 2 − r (r + 1) / 2,  with l, r clipped to T − 1,

which grows as T·w with w = l + r + 1 instead of T². Each pair costs 2 d multiply-adds: d for the score
q · k and d for adding its share of v.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_MS = 10
LENGTHS = (100, 1_000, 6_000, 30_000, 60_000)  # 1 s, 10 s, 1 min, 5 min, 10 min of frames
D_HEAD = 64


def window_mask(frames: int, left: int, right: int) -> np.ndarray:
    """Which keys each query may read: True where t − left ≤ k ≤ t + right; (T, T) bool."""
    t = np.arange(frames)
    offset = t[None, :] - t[:, None]  # key − query
    return (offset >= -left) & (offset <= right)


def attended_pairs(frames: int, left: int, right: int) -> int:
    """Query-key pairs truncated attention scores, edges included: T (l + r + 1) − l(l+1)/2 − r(r+1)/2."""
    if frames <= 0:
        return 0
    left, right = min(left, frames - 1), min(right, frames - 1)  # a window past the ends reads them all
    return frames * (left + right + 1) - left * (left + 1) // 2 - right * (right + 1) // 2


def multiply_adds(pairs: int, d: int = D_HEAD) -> int:
    """Per head: d for each score q · k and d for each weighted value, 2 d per pair."""
    return 2 * d * pairs


def truncated_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, left: int, right: int) -> np.ndarray:
    """softmax(q_t · k_j / √d) over j in t − left .. t + right only, read window by window; (T, d_v).

    Memory and work grow with T·w: no T x T matrix is formed.
    """
    frames, d = q.shape
    out = np.empty((frames, v.shape[1]))
    for t in range(frames):
        lo, hi = max(0, t - left), min(frames, t + right + 1)
        scores = k[lo:hi] @ q[t] / np.sqrt(d)
        weights = np.exp(scores - scores.max())
        out[t] = weights @ v[lo:hi] / weights.sum()
    return out


@dataclass(frozen=True)
class CostRow:
    """Full against truncated attention at one length."""

    frames: int
    full: int  # T² pairs
    truncated: int

    @property
    def seconds(self) -> float:
        return self.frames * FRAME_MS / 1000

    @property
    def ratio(self) -> float:
        return self.full / self.truncated


def costs(left: int, right: int, lengths: tuple[int, ...] = LENGTHS) -> tuple[CostRow, ...]:
    """The pairs each attention scores as the frames grow."""
    return tuple(CostRow(t, t * t, attended_pairs(t, left, right)) for t in lengths)


def table(rows: tuple[CostRow, ...], d: int = D_HEAD) -> list[dict[str, str]]:
    """The cost rows as the page shows them: pairs and multiply-adds per head, and the saving."""
    return [
        {
            "speech": f"{row.seconds:g} s" if row.seconds < 60 else f"{row.seconds / 60:g} min",
            "frames T": f"{row.frames:,}",
            "full: pairs (T²)": f"{row.full:,}",
            "truncated: pairs": f"{row.truncated:,}",
            f"full: multiply-adds (2·{d}·pairs)": f"{multiply_adds(row.full, d):,}",
            "truncated: multiply-adds": f"{multiply_adds(row.truncated, d):,}",
            "full / truncated": f"{row.ratio:,.1f}×",
        }
        for row in rows
    ]
