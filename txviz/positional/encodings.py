"""Positional encodings: sinusoidal, binary, learned (MiniLM) and rotary (SmolLM2), in numpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from txviz.core.errors import UserError

LAYOUT_NOTE = (
    "Interleaved layout, as in Vaswani et al. (2017) and Dive into Deep Learning: column 2j "
    "holds sin(i / C^(2j/d)) and column 2j+1 holds cos(i / C^(2j/d)), so each frequency "
    "fills a neighbouring sine/cosine pair."
)
# float64 keeps about 16 digits; sines, cosines and a d x d product leave gaps of about 1e-16 to 1e-15.
ROUNDING = 1e-12
ODD_D_NOTE = (
    "d is odd, so the last column is the sine of one more frequency with no cosine partner; "
    "the rotation identity holds for the paired columns only."
)
MAX_POSITIONS = 4096  # keeps the n x n similarity matrix small enough to draw
MAX_DIM = 2048


class PositionalError(UserError):
    """Bad input to a positional encoding, with a message fit for the user."""


@dataclass(frozen=True)
class SinusoidSpec:
    """Size and base of a sinusoidal encoding."""

    n: int = 60  # positions
    d: int = 32  # encoding dimensions
    base: float = 10000.0  # the C of C^(2j/d)

    def __post_init__(self) -> None:
        check_sinusoid(self.n, self.d, self.base)


def check_sinusoid(n: int, d: int, base: float) -> None:
    """Raise PositionalError with a readable message unless n, d, C describe an encoding."""
    if int(n) != n or n < 1:
        raise PositionalError(f"The number of positions n must be a whole number of at least 1 (got {n}).")
    if n > MAX_POSITIONS:
        raise PositionalError(f"n = {n} positions is more than this lab draws (at most {MAX_POSITIONS}).")
    if int(d) != d or d < 1:
        raise PositionalError(f"The dimension d must be a whole number of at least 1 (got {d}).")
    if d > MAX_DIM:
        raise PositionalError(f"d = {d} is more than this lab draws (at most {MAX_DIM}).")
    if not np.isfinite(base) or base <= 0:
        raise PositionalError(f"The base C must be a positive number (got {base}).")


def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """Angular frequency 1 / C^(2j/d) of each sine/cosine pair j; shape (ceil(d/2),)."""
    j = np.arange(0, d, 2, dtype=np.float64)  # 2j = 0, 2, 4, ...
    return 1.0 / np.power(float(base), j / d)


def sinusoidal_encoding(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """P[i, 2j] = sin(i / C^(2j/d)), P[i, 2j+1] = cos(i / C^(2j/d)); shape (n, d), float64.

    For odd d the last column is a sine whose cosine partner would be column d (see ODD_D_NOTE).
    """
    check_sinusoid(n, d, base)
    angles = np.arange(n, dtype=np.float64)[:, None] * frequencies(d, base)[None, :]  # (n, ceil(d/2))
    encoding = np.empty((n, d), dtype=np.float64)
    encoding[:, 0::2] = np.sin(angles)
    encoding[:, 1::2] = np.cos(angles[:, : d // 2])
    return encoding


# probml's eq. 15.58 written out for d = 4 (the book's example row): column pairs j = 0 and 1.
BOOK_D4_ROW = (
    r"d = 4:\quad p_i = \left[\,\sin\frac{i}{C^{0/4}},\ \cos\frac{i}{C^{0/4}},\ "
    r"\sin\frac{i}{C^{2/4}},\ \cos\frac{i}{C^{2/4}}\,\right]"
)


def slowest_turn(length: float, d: int, base: float = 10000.0) -> float:
    """Radians the slowest sine-cosine pair turns over ``length`` positions: length / C^(2(d//2 - 1)/d),
    which is C^(2/d) at length = C for even d (an odd d's last column is a lone sine, left out)."""
    return float(length * frequencies(d, base)[: max(d // 2, 1)].min())


def book_rows_note(d: int, base: float = 10000.0) -> str:
    """The book's d = 4 row at i = 1 in numbers, and what its bound T <= C means for this d and C."""
    row = sinusoidal_encoding(2, 4, base)[1]
    text = (
        f"At i = 1 and C = {base:,.0f} the d = 4 row is [{', '.join(f'{v:.4f}' for v in row)}]: the first pair "
        "turns one radian per position, the second 1/√C. The book says the table can be computed for any "
        "input length up to T ≤ C: the wavelengths run from 2π positions to 2π·C^((d−2)/d) (even d), so C "
        "sets the slowest"
    )
    if d < 2:
        return text + "; with d = 1 there is one sine column and no pair."
    turn = slowest_turn(base, d, base)
    reach = (
        "less than π, so its cosine falls steadily from position 0 to C: every position up to C sits on "
        "one slope of the slowest wave"
        if turn < np.pi
        else "more than π: with d this small even the slowest pair turns past half a circle before C"
    )
    return (
        text
        + f", and over T = C positions the slowest pair turns by {turn:.2f} radians for d = {d}, {reach}."
    )


def binary_encoding(n: int = 8, d: int = 3) -> np.ndarray:
    """Bit j of position i in column j (column 0 flips fastest, like the sinusoid's); (n, d) int."""
    if int(n) != n or n < 1:
        raise PositionalError(f"The number of positions n must be at least 1 (got {n}).")
    if int(d) != d or d < 1:
        raise PositionalError(f"The number of bits d must be at least 1 (got {d}).")
    if n > 2**d:
        raise PositionalError(f"{d} bits can tell only {2**d} positions apart, not {n}.")
    positions = np.arange(n)[:, None]
    return (positions >> np.arange(d)[None, :]) & 1


def binary_labels(n: int = 8, d: int = 3) -> list[str]:
    """Positions written in binary, most significant bit first ("000", "001", ...)."""
    return [format(i, f"0{d}b") for i in range(n)]


def rotation_matrix(phi: float, d: int, base: float = 10000.0) -> np.ndarray:
    """Block-diagonal R(phi) with p_(t+phi) = R(phi) p_t for the interleaved sinusoid; (d, d).

    Each pair (sin a, cos a) becomes (sin(a+b), cos(a+b)) via [[cos b, sin b], [-sin b, cos b]].
    """
    if d % 2:
        raise PositionalError(
            f"The rotation identity needs an even d (got {d}): a lone sine column has no cosine "
            "partner to rotate with."
        )
    check_sinusoid(1, d, base)
    rotation = np.zeros((d, d), dtype=np.float64)
    for j, omega in enumerate(frequencies(d, base)):
        c, s = np.cos(phi * omega), np.sin(phi * omega)
        rotation[2 * j : 2 * j + 2, 2 * j : 2 * j + 2] = [[c, s], [-s, c]]
    return rotation


@dataclass(frozen=True)
class ShiftCheck:
    """p_(t+phi) from the formula next to R(phi) p_t, and how far apart they are."""

    t: int
    phi: int
    direct: np.ndarray  # (d,) p_(t+phi) by the formula
    rotated: np.ndarray  # (d,) R(phi) p_t
    max_abs_difference: float

    @property
    def only_rounding(self) -> bool:
        """The two agree up to float64 rounding: any gap left is noise, not a difference."""
        return self.max_abs_difference < ROUNDING


def shift_check(t: int, phi: int, d: int, base: float = 10000.0) -> ShiftCheck:
    """Compare p_(t+phi) with R(phi) p_t for one position t and offset phi."""
    if t < 0 or t + phi < 0:
        raise PositionalError(f"Positions must not be negative (t = {t}, t + phi = {t + phi}).")
    encoding = sinusoidal_encoding(max(t, t + phi) + 1, d, base)
    rotated = rotation_matrix(phi, d, base) @ encoding[t]
    direct = encoding[t + phi]
    return ShiftCheck(t, phi, direct, rotated, float(np.abs(direct - rotated).max()))


def dot_similarity(encoding: np.ndarray) -> np.ndarray:
    """Dot product of every pair of position vectors; (n, d) -> (n, n)."""
    return encoding @ encoding.T


def cosine_similarity(encoding: np.ndarray) -> np.ndarray:
    """Cosine of the angle between every pair of position vectors; (n, d) -> (n, n)."""
    norms = np.linalg.norm(encoding, axis=1, keepdims=True)
    unit = encoding / np.where(norms == 0, 1.0, norms)
    return unit @ unit.T


def similarity_by_offset(similarity: np.ndarray) -> np.ndarray:
    """Mean of the k-th diagonal of an (n, n) similarity for k = 0 .. n-1: how it falls with distance."""
    n = similarity.shape[0]
    return np.array([np.diagonal(similarity, k).mean() for k in range(n)])


@dataclass(frozen=True)
class PrincipalComponents:
    """Projection of rows onto their first principal axes."""

    scores: np.ndarray  # (n, k) coordinates of each row
    explained_ratio: np.ndarray  # (k,) share of variance of each component


def principal_components(matrix: np.ndarray, k: int = 2) -> PrincipalComponents:
    """First k principal components of the rows of a matrix (scikit-learn's exact, full-SVD PCA)."""
    from sklearn.decomposition import PCA

    k = min(k, *matrix.shape)
    if not np.any(matrix != matrix[0]):  # every row the same: no variance to explain
        return PrincipalComponents(scores=np.zeros((len(matrix), k)), explained_ratio=np.zeros(k))
    model = PCA(n_components=k, svd_solver="full")
    return PrincipalComponents(
        scores=model.fit_transform(matrix), explained_ratio=model.explained_variance_ratio_
    )


def _layout(model: Any):
    """The model's layout, or None for a model the map cannot place (no family knowledge here)."""
    from txviz.core.layouts import UnknownLayoutError, cached_layout

    try:
        return cached_layout(model)
    except (UnknownLayoutError, AttributeError):  # AttributeError: no config, not a transformers model
        return None


def learned_position_embeddings(model: Any) -> np.ndarray:
    """The learned position table the model map names, from position 0: (n_ctx, d_model) float32 numpy."""
    from txviz.core.layouts import UnknownLayoutError

    layout = _layout(model)
    try:
        table = layout.position_table(model, "learned", layout.stacks[0].name) if layout else None
    except UnknownLayoutError:
        table = None
    if table is None:
        raise PositionalError(
            "This model has no learned absolute position embeddings the model map names (it may use rotary "
            "positions)."
        )
    offset = layout.record.positions.offset
    skip = int(getattr(table, offset)) if offset else 0  # BART and OPT keep rows before position 0
    return table.weight[skip:].detach().float().cpu().numpy()


@dataclass(frozen=True)
class RopeSpec:
    """Rotary position settings of a model, read from its config."""

    theta: float  # base of the frequencies
    head_dim: int
    inv_freq: np.ndarray  # (head_dim / 2,) theta^(-2j / head_dim)
    rope_type: str = "default"


def rope_frequencies(head_dim: int, theta: float) -> np.ndarray:
    """theta^(-2j / head_dim) for j = 0 .. head_dim/2 - 1, as in Llama; (head_dim/2,)."""
    if head_dim < 2 or head_dim % 2:
        raise PositionalError(f"Rotary positions need an even head dimension (got {head_dim}).")
    return 1.0 / np.power(float(theta), np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)


def rope_spec(config: Any) -> RopeSpec:
    """RopeSpec from a Hugging Face config (rope_parameters in transformers 5, rope_theta before)."""
    parameters = getattr(config, "rope_parameters", None) or {}
    theta = parameters.get("rope_theta", getattr(config, "rope_theta", None))
    if theta is None:
        raise PositionalError("This model's config has no rotary base (rope_theta).")
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    rope_type = parameters.get("rope_type", "default")
    return RopeSpec(float(theta), int(head_dim), rope_frequencies(int(head_dim), theta), rope_type)


def apply_rope(x: np.ndarray, positions: np.ndarray, inv_freq: np.ndarray) -> np.ndarray:
    """Rotate vectors by their positions, Llama's half-split layout; x (..., n, h), positions (n,)."""
    angles = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]  # (n, h/2)
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)  # (n, h)
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
    half = x.shape[-1] // 2
    rotated_half = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated_half * sin


@dataclass(frozen=True)
class RopeOffsetCheck:
    """q_m . k_n for rotary q and k at every pair of positions, and its dependence on m - n."""

    scores: np.ndarray  # (n, n) [query_pos m, key_pos n] of rope(q, m) . rope(k, n)
    by_offset: np.ndarray  # (n,) score at offset m - n = 0 .. n-1 (read off the first column)
    max_diagonal_spread: float  # largest max-min along any diagonal: 0 if only m - n matters


def seeded_rope_offset_check(spec: RopeSpec, n: int, seed: int = 0) -> RopeOffsetCheck:
    """rope_offset_check on seeded random q and k of the model's head size."""
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=spec.head_dim), rng.normal(size=spec.head_dim)
    return rope_offset_check(q, k, n, spec.inv_freq)


def rope_offset_check(q: np.ndarray, k: np.ndarray, n: int, inv_freq: np.ndarray) -> RopeOffsetCheck:
    """Place one query and one key vector at positions 0..n-1 and score every pair."""
    positions = np.arange(n)
    queries = apply_rope(np.broadcast_to(q, (n, q.shape[-1])), positions, inv_freq)  # (n, h)
    keys = apply_rope(np.broadcast_to(k, (n, k.shape[-1])), positions, inv_freq)
    scores = queries @ keys.T
    spread = max(float(np.ptp(np.diagonal(scores, off))) for off in range(-n + 1, n))
    return RopeOffsetCheck(scores, scores[:, 0].copy(), spread)


@dataclass(frozen=True)
class AddedVsConcatenated:
    """Token embeddings X and positions P combined two ways, with the similarity split into parts."""

    added: np.ndarray  # (n, d) X + P
    concatenated: np.ndarray  # (n, 2d) [X | P]
    content: np.ndarray  # (n, n) X X^T
    position: np.ndarray  # (n, n) P P^T
    cross: np.ndarray  # (n, n) X P^T + P X^T: present when added, absent when concatenated

    @property
    def mean_norms(self) -> tuple[float, float]:
        """Mean length of a token vector and of a position vector: which one dominates the sum."""
        n = self.content.shape[0]
        d = self.added.shape[1]
        x, p = self.concatenated[:, :d], self.concatenated[:, d:]
        return float(np.linalg.norm(x, axis=1).sum() / n), float(np.linalg.norm(p, axis=1).sum() / n)


def added_vs_concatenated(x: np.ndarray, p: np.ndarray) -> AddedVsConcatenated:
    """X + P against [X | P]: (X+P)(X+P)^T = XX^T + PP^T + cross, [X|P][X|P]^T = XX^T + PP^T."""
    if x.shape != p.shape:
        raise PositionalError(f"X {x.shape} and P {p.shape} must have the same shape to be added.")
    return AddedVsConcatenated(
        added=x + p,
        concatenated=np.concatenate([x, p], axis=1),
        content=x @ x.T,
        position=p @ p.T,
        cross=x @ p.T + p @ x.T,
    )


def buffer_difference(model: Any, spec: RopeSpec) -> float | None:
    """Largest gap between the config's frequencies and the ones the model holds, if it holds any."""
    used = model_inv_freq(model)
    return None if used is None else float(np.abs(used - spec.inv_freq).max())


def model_inv_freq(model: Any) -> np.ndarray | None:
    """The rotary frequencies a loaded model uses (the buffer its model-map record names), if any."""
    from txviz.core.layouts import UnknownLayoutError

    layout = _layout(model)
    name = (
        layout.record.positions.frequencies if layout and layout.record and layout.record.positions else None
    )
    if name is None:
        return None
    try:
        rotary = layout.position_table(model, "rotary")
    except UnknownLayoutError:
        return None
    buffer = dict(rotary.named_buffers(recurse=False)).get(name)
    return None if buffer is None else buffer.detach().double().cpu().numpy()


def token_embeddings(loaded: Any, text: str, max_tokens: int = 32) -> tuple[list[str], np.ndarray]:
    """A text's tokens and their word embeddings (before positions are added); (n, d_model)."""
    import torch

    from txviz.core.running import run_module
    from txviz.core.tokens import readable_tokens

    if not text or not text.strip():
        raise PositionalError("The text is empty: type a short sentence.")
    ids = loaded.tokenizer(text, truncation=True, max_length=max_tokens)["input_ids"]
    table = loaded.model.get_input_embeddings()
    with torch.no_grad():
        vectors = run_module(table, torch.tensor(ids, device=table.weight.device)).float().cpu().numpy()
    tokens, _ = readable_tokens(loaded.tokenizer, ids)
    return list(tokens), vectors


@dataclass(frozen=True)
class EncodingSummary:
    """A position matrix with what the lab shows of it: similarity, its fall-off, its main axes."""

    name: str
    matrix: np.ndarray  # (n, d)
    cosine: np.ndarray  # (n, n)
    by_offset: np.ndarray  # (n,) mean cosine at each distance
    components: PrincipalComponents  # first two


def summarize(name: str, matrix: np.ndarray) -> EncodingSummary:
    """Cosine similarity, its mean by distance, and the first two principal components."""
    cosine = cosine_similarity(matrix)
    return EncodingSummary(name, matrix, cosine, similarity_by_offset(cosine), principal_components(matrix))


POSITION_SOURCES = ("MiniLM learned", "sinusoid (C = 10,000)")


def positions_like(source: str, x: np.ndarray, model: Any = None) -> np.ndarray:
    """Positions for the rows of x: a model's learned table or the sinusoid; same shape as x."""
    if source == POSITION_SOURCES[0]:
        return learned_position_embeddings(model)[: x.shape[0]]
    return sinusoidal_encoding(*x.shape)
