"""Attention mask patterns as boolean matrices: True where a query may attend to a key.

Every mask has shape (query_pos, key_pos). Builders take plain ints, validate them with messages a
user can act on, and return numpy arrays so figures and records need no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from txviz.core.errors import UserError


class MaskError(UserError):
    """A mask parameter a user can fix; the message says how."""


def _check_positive(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value:
        raise MaskError(f"{name} must be a whole number, got {value!r}.")
    if value < 1:
        raise MaskError(f"{name} must be at least 1, got {value}.")
    return int(value)


def _check_non_negative(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value:
        raise MaskError(f"{name} must be a whole number, got {value!r}.")
    if value < 0:
        raise MaskError(f"{name} must be 0 or more, got {value}.")
    return int(value)


def _offsets(n: int) -> np.ndarray:
    """Query minus key position for every pair; (n, n) ints."""
    pos = np.arange(n, dtype=np.int32)  # int32 halves the memory of n x n offsets
    return pos[:, None] - pos[None, :]


def _causal(mask: np.ndarray) -> np.ndarray:
    """Keep only keys at or before the query."""
    return mask & np.tri(*mask.shape, dtype=bool)


def full_mask(n_query: int, n_key: int | None = None) -> np.ndarray:
    """Every query sees every key (encoder self-attention)."""
    n_query = _check_positive("Number of queries", n_query)
    n_key = n_query if n_key is None else _check_positive("Number of keys", n_key)
    return np.ones((n_query, n_key), dtype=bool)


def causal_mask(n: int) -> np.ndarray:
    """Each query sees itself and earlier keys (decoder self-attention)."""
    return np.tri(_check_positive("Sequence length", n), dtype=bool)


def padding_mask(n: int, n_pad: int) -> np.ndarray:
    """The last n_pad keys are padding, hidden from every query (all of them if n_pad >= n)."""
    n = _check_positive("Sequence length", n)
    n_pad = min(_check_non_negative("Padding tokens", n_pad), n)
    mask = np.ones((n, n), dtype=bool)
    mask[:, n - n_pad :] = False
    return mask


def local_window_mask(n: int, window: int, causal: bool = False) -> np.ndarray:
    """Keys within `window` positions of the query (before it only, when causal)."""
    n = _check_positive("Sequence length", n)
    window = _check_non_negative("Window", window)
    mask = np.abs(_offsets(n)) <= window
    return _causal(mask) if causal else mask


def dilated_mask(n: int, window: int, rate: int, causal: bool = False) -> np.ndarray:
    """`window` keys each side, `rate` positions apart: a dilated convolution's taps."""
    n = _check_positive("Sequence length", n)
    window = _check_non_negative("Window", window)
    rate = _check_positive("Dilation rate", rate)
    offsets = _offsets(n)
    mask = (np.abs(offsets) <= window * rate) & (offsets % rate == 0)
    return _causal(mask) if causal else mask


def strided_mask(n: int, stride: int, causal: bool = True) -> np.ndarray:
    """Sparse Transformer's strided pattern: the last `stride` keys and every stride-th key."""
    n = _check_positive("Sequence length", n)
    stride = _check_positive("Stride", stride)
    offsets = _offsets(n)
    mask = (np.abs(offsets) < stride) | (offsets % stride == 0)
    return _causal(mask) if causal else mask


def block_ids(n: int, n_blocks: int) -> np.ndarray:
    """Block index of each position when n positions are cut into n_blocks contiguous blocks."""
    n = _check_positive("Sequence length", n)
    # More blocks than tokens: each token is a block of its own.
    n_blocks = min(_check_positive("Number of blocks", n_blocks), n)
    # Block sizes differ by at most one, the larger ones first (like numpy.array_split).
    return np.repeat(np.arange(n_blocks), [len(b) for b in np.array_split(np.arange(n), n_blocks)])


def block_local_mask(n: int, n_blocks: int, causal: bool = False) -> np.ndarray:
    """Queries see only keys in their own block (block-diagonal)."""
    ids = block_ids(n, n_blocks)
    mask = ids[:, None] == ids[None, :]
    return _causal(mask) if causal else mask


def _check_positions(name: str, positions: Iterable[int], n: int) -> np.ndarray:
    positions = np.asarray(sorted({int(p) for p in positions}), dtype=int)
    if positions.size and (positions.min() < 0 or positions.max() >= n):
        bad = [int(p) for p in positions if p < 0 or p >= n]
        raise MaskError(f"{name} {bad} are outside the text (positions 0 to {n - 1}).")
    return positions


def selected_queries_mask(base: np.ndarray, selected: Sequence[int], causal: bool = False) -> np.ndarray:
    """Selected queries see every key (every earlier key, when causal) on top of `base`."""
    n_query = base.shape[0]
    rows = _check_positions("Selected tokens", selected, n_query)
    mask = base.copy()
    mask[rows, :] = True
    return _causal(mask) if causal else mask


def global_tokens_mask(n: int, n_global: int, window: int = 0, causal: bool = False) -> np.ndarray:
    """Longformer: the first n_global tokens see and are seen by all, others a local window."""
    n = _check_positive("Sequence length", n)
    n_global = _check_non_negative("Global tokens", n_global)
    mask = local_window_mask(n, window)
    mask[:n_global, :] = True
    mask[:, :n_global] = True
    return _causal(mask) if causal else mask


def random_mask(n: int, n_random: int, seed: int = 0, causal: bool = False, block: int = 1) -> np.ndarray:
    """BigBird's random part: each query sees n_random keys drawn without replacement (seeded).

    With block > 1 the draw is over blocks of `block` tokens, as BigBird does so that a
    block-sparse kernel can skip whole blocks; n_random then counts key blocks.
    """
    n = _check_positive("Sequence length", n)
    n_random = _check_positive("Random keys", n_random)
    block = _check_positive("Random block size", block)
    if block > 1:
        n_blocks = -(-n // block)
        grid = random_mask(n_blocks, n_random, seed, causal)
        mask = grid.repeat(block, axis=0).repeat(block, axis=1)[:n, :n]
        return _causal(mask) if causal else mask
    rng = np.random.default_rng(_check_non_negative("Seed", seed))
    mask = np.zeros((n, n), dtype=bool)
    rows = np.arange(n)
    # Causal queries draw only from the keys they may see: the first q + 1.
    pool = rows + 1 if causal else np.full(n, n)
    # Floyd's algorithm, all rows at once: n_random steps give each row a uniform subset.
    for step in range(n_random):
        top = pool - n_random + step  # (n,) largest key this step may add
        live = top >= 0  # rows whose pool is smaller than n_random take every key
        draw = np.floor(rng.random(n) * (np.maximum(top, 0) + 1)).astype(int)
        pick = np.where(mask[rows, draw], top, draw)
        mask[rows[live], pick[live]] = True
    return mask


def bigbird_mask(
    n: int,
    window: int,
    n_global: int,
    n_random: int,
    seed: int = 0,
    causal: bool = False,
    block: int = 1,
) -> np.ndarray:
    """BigBird: local window, global tokens and random keys (or key blocks) together."""
    mask = global_tokens_mask(n, n_global, window)
    if _check_non_negative("Random keys", n_random):
        mask |= random_mask(n, n_random, seed, block=block)
    return _causal(mask) if causal else mask


def prefix_lm_mask(n: int, prefix: int) -> np.ndarray:
    """Prefix LM: the first `prefix` tokens see each other fully, the rest are causal."""
    n = _check_positive("Sequence length", n)
    prefix = _check_non_negative("Prefix length", prefix)
    mask = causal_mask(n)
    mask[:, :prefix] = True
    return mask


def cross_attention_mask(n_query: int, n_key: int, n_key_valid: int | None = None) -> np.ndarray:
    """Decoder queries over encoder keys: rectangular, padded source keys hidden."""
    mask = full_mask(n_query, n_key)
    if n_key_valid is not None:
        n_key_valid = _check_non_negative("Real source tokens", n_key_valid)
        if n_key_valid > n_key:
            raise MaskError(f"Real source tokens ({n_key_valid}) cannot exceed the source length ({n_key}).")
        mask[:, n_key_valid:] = False
    return mask


def swin_regions(height: int, width: int, window: int, shifted: bool = False) -> np.ndarray:
    """Window index of each patch on the grid, (height, width) ints numbered row by row.

    Shifted windows move the partition by window // 2. Swin implements it by a cyclic shift plus a
    mask that keeps wrapped pieces apart, which is the same as this offset partition without wrap.
    """
    height = _check_positive("Grid height", height)
    width = _check_positive("Grid width", width)
    window = _check_positive("Window", window)
    shift = window // 2 if shifted else 0
    # Floor division puts the first `shift` rows (columns) in a region of their own (index -1).
    row_region = (np.arange(height) - shift) // window + 1  # (H,)
    col_region = (np.arange(width) - shift) // window + 1  # (W,)
    raw = row_region[:, None] * (col_region.max() + 1) + col_region[None, :]
    return np.unique(raw, return_inverse=True)[1].reshape(height, width)  # numbered 0, 1, ...


def swin_window_mask(height: int, width: int, window: int, shifted: bool = False) -> np.ndarray:
    """Swin attention on a patch grid, patches in row-major order: same window only; (H*W, H*W)."""
    region = swin_regions(height, width, window, shifted).ravel()
    return region[:, None] == region[None, :]


@dataclass(frozen=True)
class Fixed:
    """A mask plus the rows that had nothing to attend to and were given their own position."""

    mask: np.ndarray  # bool (query_pos, key_pos)
    fixed_rows: tuple[int, ...] = ()

    @property
    def notice(self) -> str:
        """A sentence for the user, empty when no row needed fixing."""
        if not self.fixed_rows:
            return ""
        shown = ", ".join(str(r) for r in self.fixed_rows[:10])
        more = "" if len(self.fixed_rows) <= 10 else f" and {len(self.fixed_rows) - 10} more"
        return (
            f"{len(self.fixed_rows)} quer{'y' if len(self.fixed_rows) == 1 else 'ies'} "
            f"(position {shown}{more}) had no key to attend to; each now attends to itself "
            "so its softmax is defined."
        )


def ensure_attendable(mask: np.ndarray) -> Fixed:
    """Let every query with no allowed key attend to itself (or key 0 past the last key)."""
    mask = np.asarray(mask, dtype=bool).copy()
    empty = np.flatnonzero(~mask.any(axis=1))
    # A softmax over no keys is 0/0 = NaN; attending to itself leaves the token unchanged instead.
    mask[empty, np.minimum(empty, mask.shape[1] - 1)] = True
    return Fixed(mask, tuple(int(r) for r in empty))


def fraction_kept(mask: np.ndarray) -> float:
    """Share of (query, key) pairs the mask allows."""
    return float(np.count_nonzero(mask)) / mask.size


@dataclass(frozen=True)
class Param:
    """One integer parameter of a pattern, with the range a widget should offer."""

    name: str
    label: str
    default: int
    minimum: int = 1
    help: str = ""


@dataclass(frozen=True)
class Pattern:
    """A named mask family: how to build it for n tokens and what it is for."""

    key: str
    label: str
    build: Callable[..., np.ndarray]  # (n, **params) -> bool (n, n)
    params: tuple[Param, ...] = ()
    description: str = ""
    causal: bool = False
    square: bool = True  # False: queries and keys come from different sequences

    def mask(self, n: int, **params: int) -> np.ndarray:
        """Build the mask for n tokens; missing parameters take their defaults."""
        values = {p.name: p.default for p in self.params} | params
        unknown = set(values) - {p.name for p in self.params}
        if unknown:
            raise MaskError(f"{self.label} has no parameter {sorted(unknown)}.")
        return self.build(n, **values)


_W = Param("window", "Window (keys each side)", 2, 0, "How far a query looks left and right.")
_WC = Param("window", "Window (keys back)", 2, 0, "How far back a query looks.")
_RATE = Param("rate", "Dilation rate", 2, 1, "Distance between the keys a query sees.")
_GLOBAL = Param("n_global", "Global tokens", 2, 0, "The first tokens, seen by and seeing all.")
_RANDOM = Param("n_random", "Random keys per query", 2, 1, "Drawn with a fixed seed.")
_SEED = Param("seed", "Random seed", 0, 0)

PATTERNS: dict[str, Pattern] = {
    p.key: p
    for p in [
        Pattern("full", "Full (encoder)", full_mask, (), "Every token sees every token."),
        Pattern(
            "causal",
            "Causal (decoder)",
            causal_mask,
            (),
            "Each token sees itself and the past.",
            causal=True,
        ),
        Pattern(
            "padding",
            "Padding",
            padding_mask,
            (
                Param(
                    "n_pad",
                    "Padding tokens at the end",
                    2,
                    0,
                    "Hidden from every query.",
                ),
            ),
            "Padding keys at the end are hidden from every query.",
        ),
        Pattern(
            "local",
            "Local window (encoder)",
            lambda n, window: local_window_mask(n, window),
            (_W,),
            "A band around the diagonal: a convolution's receptive field.",
        ),
        Pattern(
            "local_causal",
            "Local window (decoder)",
            lambda n, window: local_window_mask(n, window, causal=True),
            (_WC,),
            "The last few tokens only (sliding-window attention, as in Mistral).",
            causal=True,
        ),
        Pattern(
            "dilated",
            "Dilated",
            lambda n, window, rate: dilated_mask(n, window, rate, causal=True),
            (_WC, _RATE),
            "Keys rate apart: a wider reach for the same number of pairs.",
            causal=True,
        ),
        Pattern(
            "strided",
            "Strided (Sparse Transformer)",
            lambda n, stride: strided_mask(n, stride, causal=True),
            (
                Param(
                    "stride",
                    "Stride",
                    4,
                    1,
                    "Recent keys, then every stride-th key back.",
                ),
            ),
            "Child et al. 2019: the last stride keys and every stride-th key before them.",
            causal=True,
        ),
        Pattern(
            "block",
            "Block-local",
            block_local_mask,
            (Param("n_blocks", "Number of blocks (K)", 4, 1, "Contiguous blocks."),),
            "The text is cut into K blocks; tokens see only their own block: K blocks of N/K tokens "
            "compute K (N/K)² = N²/K pairs instead of N², a K-th of full attention (when K does not "
            "divide N, block sizes differ by one and a few more pairs are kept).",
        ),
        Pattern(
            "selected",
            "Selected tokens see everything",
            lambda n, window, every: selected_queries_mask(
                local_window_mask(n, window, causal=True),
                range(every - 1, n, every),
                causal=True,
            ),
            (_WC, Param("every", "Every k-th token is selected", 4, 1)),
            "A causal local window, plus selected tokens that see the whole past.",
            causal=True,
        ),
        Pattern(
            "global",
            "Global tokens (Longformer)",
            lambda n, n_global, window: global_tokens_mask(n, n_global, window),
            (_GLOBAL, _W),
            "Beltagy et al. 2020: a local window plus tokens that see and are seen by all.",
        ),
        Pattern(
            "random",
            "Random (BigBird)",
            lambda n, n_random, seed: random_mask(n, n_random, seed),
            (_RANDOM, _SEED),
            "Each query sees a few keys drawn at random.",
        ),
        Pattern(
            "bigbird",
            "BigBird (window + global + random)",
            bigbird_mask,
            (_W, _GLOBAL, _RANDOM, _SEED),
            "Zaheer et al. 2020: local, global and random attention together.",
        ),
        Pattern(
            "cross",
            "Cross-attention (rectangular)",
            lambda n, n_source, n_pad: cross_attention_mask(n, n_source, max(0, n_source - n_pad)),
            (
                Param("n_source", "Source (encoder) tokens", 10, 1, "Keys come from the encoder."),
                Param("n_pad", "Padding tokens in the source", 2, 0, "Hidden from every query."),
            ),
            "Decoder queries (rows) over encoder keys (columns): every real source token is seen.",
            square=False,
        ),
        Pattern(
            "prefix_lm",
            "Prefix LM",
            prefix_lm_mask,
            (Param("prefix", "Prefix length", 4, 0, "Tokens that see each other fully."),),
            "A bidirectional prefix (the prompt), then causal generation (T5, UniLM).",
        ),
    ]
}

# Prince, Understanding Deep Learning, fig. 12.15: the eight interaction matrices of restricted
# attention, a) to h). Each entry: caption, pattern key, parameters.
TEXTBOOK_EIGHT: tuple[tuple[str, str, dict[str, int]], ...] = (
    ("a) Full (encoder)", "full", {}),
    ("b) Causal (decoder)", "causal", {}),
    ("c) Convolutional (encoder)", "local", {"window": 1}),
    ("d) Convolutional (decoder)", "local_causal", {"window": 2}),
    ("e) Dilated, rate 2", "dilated", {"window": 2, "rate": 2}),
    ("f) Dilated, rate 3", "dilated", {"window": 2, "rate": 3}),
    ("g) Selected tokens see all", "selected", {"window": 2, "every": 4}),
    ("h) Global tokens", "global", {"n_global": 2, "window": 1}),
)


def textbook_eight(n: int = 16) -> list[tuple[str, np.ndarray]]:
    """The textbook's eight interaction matrices for n tokens, as (caption, mask) pairs."""
    return [(caption, PATTERNS[key].mask(n, **params)) for caption, key, params in TEXTBOOK_EIGHT]


def fraction_kept_by_pattern(n: int) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Labels and fraction of pairs kept of every pattern at its default parameters, for n tokens."""
    labels = tuple(p.label for p in PATTERNS.values())
    return labels, tuple(fraction_kept(p.mask(n)) for p in PATTERNS.values())


def pairs_computed(pattern: Pattern, ns: Sequence[int], **params: int) -> list[int]:
    """Number of allowed (query, key) pairs for each sequence length in ns."""
    return [int(np.count_nonzero(pattern.mask(n, **params))) for n in ns]
