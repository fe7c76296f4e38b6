"""Low-rank (Linformer) and random-feature (Performer) attention on a real head, and the map of
efficient transformers (probml fig. 15.29, after Tay et al. 2020) with where txviz shows each family.

Linformer (Wang et al. 2020) projects the n keys and values to kp rows with a kp x n matrix E:
softmax(q (E K)^T / sqrt(d)) (E V) costs O(n kp d). Linformer learns E; here E is fixed (random
Gaussian, as its Johnson-Lindenstrauss argument, or the mean of kp segments), applied to a head
trained with full softmax, so the error shows what the projection alone loses.

Performer (Choromanski et al. 2021, FAVOR+) writes exp(q.k) = E_w[phi(q) phi(k)] with positive
random features phi(x) = exp(w.x - |x|^2 / 2) / sqrt(m), w ~ N(0, I) drawn orthogonal in blocks:
an unbiased estimate of the softmax kernel that tightens as the number of features m grows. One
feature's estimate of exp(x.y) has relative variance exp(|x + y|^2) - 1 (Choromanski et al., Lemma 2;
x, y are q, k over d^(1/4)): long queries and keys need exponentially many features. The
numbers are hand-written in numpy, as linear.py's are, so each step can be read beside the formula.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from txviz.selfattention.linear import HeadQKV, linear_weights, softmax_weights

PROJECTIONS = ("random Gaussian", "segment means")


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Softmax along the last axis, shifted by the row max."""
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def projection(n: int, kp: int, kind: str = "random Gaussian", seed: int = 0) -> np.ndarray:
    """A kp x n matrix E: Gaussian entries N(0, 1/kp), or row r the mean of the r-th of kp segments."""
    if not 1 <= kp <= n:
        raise ValueError(f"kp must be between 1 and n = {n} (got {kp}).")
    if kind == "random Gaussian":
        return np.random.default_rng(seed).normal(scale=1 / np.sqrt(kp), size=(kp, n))
    if kind == "segment means":
        segment = np.minimum(np.arange(n) * kp // n, kp - 1)  # kp contiguous, near-equal segments
        e = (segment[None, :] == np.arange(kp)[:, None]).astype(np.float64)
        return e / e.sum(axis=1, keepdims=True)
    raise ValueError(f"Unknown projection {kind!r}: pick one of {PROJECTIONS}.")


def linformer(q: np.ndarray, k: np.ndarray, v: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights over the kp projected keys (n, kp) and outputs softmax(q (E K)^T / sqrt d) (E V) (n, d_v)."""
    weights = softmax_rows(q @ (e @ k).T / np.sqrt(q.shape[-1]))
    return weights, weights @ (e @ v)


def orthogonal_gaussian(m: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """m x d feature directions: orthogonal within blocks of d, each row as long as a Gaussian vector."""
    blocks = []
    for _ in range(-(-m // d)):
        q, r = np.linalg.qr(rng.normal(size=(d, d)))
        blocks.append((q * np.sign(np.diag(r))).T)  # the sign fix makes the rotation uniform (Haar)
    directions = np.concatenate(blocks)[:m]
    lengths = np.linalg.norm(rng.normal(size=(m, d)), axis=1)  # chi(d): the lengths of iid Gaussian rows
    return directions * lengths[:, None]


def positive_features(x: np.ndarray, w: np.ndarray, per_row: bool = True) -> np.ndarray:
    """exp(w.x - |x|^2 / 2 - c) / sqrt(m): phi(q).phi(k) estimates exp(q.k) up to the constants c.

    c is the largest exponent of each row (per_row, for queries) or of all rows (for keys): a constant
    per query row and one for all keys leave every row's normalised weights unchanged, and keep exp
    from overflowing.
    """
    exponent = x @ w.T - 0.5 * (x**2).sum(-1, keepdims=True)
    shift = exponent.max(axis=1, keepdims=True) if per_row else exponent.max()
    return np.exp(exponent - shift) / np.sqrt(len(w))


def unshifted_features(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """exp(w.x - |x|^2 / 2) / sqrt(m) with no constant taken out: E[phi(x).phi(y)] = exp(x.y)."""
    return np.exp(x @ w.T - 0.5 * (x**2).sum(-1, keepdims=True)) / np.sqrt(len(w))


def performer_features(q: np.ndarray, k: np.ndarray, m: int, seed: int = 0, orthogonal: bool = True):
    """phi(q), phi(k) (n, m) for the kernel exp(q.k / sqrt d): q and k are scaled by d^(-1/4) first."""
    d = q.shape[-1]
    rng = np.random.default_rng(seed)
    w = orthogonal_gaussian(m, d, rng) if orthogonal else rng.normal(size=(m, d))
    return positive_features(q / d**0.25, w), positive_features(k / d**0.25, w, per_row=False)


def performer_weights(q: np.ndarray, k: np.ndarray, m: int, seed: int = 0) -> np.ndarray:
    """The n x n weights Performer never builds: phi(q) phi(k)^T normalised row by row."""
    phi_q, phi_k = performer_features(q, k, m, seed)
    kernel = phi_q @ phi_k.T
    return kernel / kernel.sum(axis=1, keepdims=True)


def performer(q: np.ndarray, k: np.ndarray, v: np.ndarray, m: int, seed: int = 0) -> np.ndarray:
    """Outputs in O(n m d): phi(Q) (phi(K)^T V) / phi(Q) (phi(K)^T 1); (n, d_v)."""
    phi_q, phi_k = performer_features(q, k, m, seed)
    return (phi_q @ (phi_k.T @ v)) / (phi_q @ phi_k.sum(axis=0))[:, None]


def relative_error(output: np.ndarray, reference: np.ndarray) -> float:
    """||O - O_soft|| / ||O_soft||."""
    return float(np.linalg.norm(output - reference) / np.linalg.norm(reference))


def weight_distance(weights: np.ndarray, reference: np.ndarray) -> float:
    """Mean over queries of the total variation 0.5 sum |a - a_soft|."""
    return float(0.5 * np.abs(weights - reference).sum(axis=1).mean())


@dataclass(frozen=True)
class EfficientComparison:
    """Linformer, Performer and elu + 1 against MiniLM's softmax on one head."""

    kp: int
    m: int
    linformer_weights: np.ndarray  # (n, kp) each query's weights over the projected keys
    performer_weights: np.ndarray  # (n, n)
    linformer_error: float  # output error
    performer_error: float
    performer_distance: float  # total variation of the weights
    elu_error: float
    elu_distance: float


def compare(
    head: HeadQKV, kp: int, m: int, kind: str = "random Gaussian", seed: int = 0
) -> EfficientComparison:
    """Every number of the efficient-attention section for one head."""
    q, k, v = head.queries, head.keys, head.values
    soft = softmax_weights(q, k)
    out = soft @ v
    lin_w, lin_out = linformer(q, k, v, projection(len(q), kp, kind, seed))
    perf_w = performer_weights(q, k, m, seed)
    elu = linear_weights(q, k)
    return EfficientComparison(
        kp=kp,
        m=m,
        linformer_weights=lin_w,
        performer_weights=perf_w,
        linformer_error=relative_error(lin_out, out),
        performer_error=relative_error(performer(q, k, v, m, seed), out),
        performer_distance=weight_distance(perf_w, soft),
        elu_error=relative_error(elu @ v, out),
        elu_distance=weight_distance(elu, soft),
    )


def linformer_curve(head: HeadQKV, kind: str, seeds: int = 5) -> tuple[list[int], list[float]]:
    """Output error against kp = 1..n (random projections averaged over seeds)."""
    q, k, v = head.queries, head.keys, head.values
    out = softmax_weights(q, k) @ v
    n = len(q)
    sizes = sorted({max(1, round(n * f)) for f in (0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1.0)})
    repeats = seeds if kind == "random Gaussian" else 1
    errors = [
        float(
            np.mean(
                [
                    relative_error(linformer(q, k, v, projection(n, kp, kind, s))[1], out)
                    for s in range(repeats)
                ]
            )
        )
        for kp in sizes
    ]
    return sizes, errors


FEATURE_COUNTS = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)


def performer_curve(head: HeadQKV, seeds: int = 5, counts=FEATURE_COUNTS) -> tuple[list[int], list[float]]:
    """Output error against the number of random features m, averaged over seeds."""
    q, k, v = head.queries, head.keys, head.values
    out = softmax_weights(q, k) @ v
    errors = [
        float(np.mean([relative_error(performer(q, k, v, m, s), out) for s in range(seeds)])) for m in counts
    ]
    return list(counts), errors


@dataclass(frozen=True)
class Family:
    """One family of efficient transformers, its members, and where txviz shows it."""

    name: str
    idea: str
    members: str
    shown: tuple[tuple[str, str], ...]  # (page name in txviz/page_map.py, what to open there)
    note: str = ""  # what the links do not show, said plainly


FAMILIES = (
    Family(
        "Fixed patterns",
        "each query reads a fixed set of keys: a window, strides, blocks",
        "Sparse Transformer, Longformer (window), BigBird, Image Transformer",
        (("Masking_Patterns", "Gallery, On a real model and Real cost tabs"),),
    ),
    Family(
        "Learnable patterns",
        "the content decides which keys a query reads, from cheap hashes or clusters, before any score "
        "is computed",
        "Reformer (LSH), Routing Transformer (k-means), Sinkhorn",
        (
            (
                "Soft_vs_Hard",
                "not this family: top-k and sparsemax sparsify the weights after all n² scores",
            ),
        ),
        "Not shown in txviz: hashing and clustering, which pick each query's keys before scoring and so "
        "compute fewer than n² scores. Soft vs Hard's top-k and sparsemax also keep a content-chosen set "
        "of keys, but only after computing every one of the n² scores: they sparsify the weights and save "
        "nothing.",
    ),
    Family(
        "Low rank and kernels",
        "never build the n x n matrix: project keys, or factor exp(q.k) into features",
        "Linformer, Performer, Linear Transformer",
        (("Self_Attention", "Linear attention tab: elu + 1, Linformer and Performer on MiniLM"),),
    ),
    Family(
        "Memory",
        "a few global tokens or memory slots that every query reads and that read everything",
        "Set Transformer (inducing points), Longformer and BigBird (global tokens), ETC",
        (("Masking_Patterns", "Gallery: global tokens and BigBird's patterns"),),
    ),
    Family(
        "Recurrence",
        "carry a state from segment to segment instead of attending to all of the past",
        "Transformer-XL, Compressive Transformer",
        (
            ("Self_Attention", "Linear attention tab: causal linear attention run as an RNN"),
            ("Why_Attention", "an RNN's path length and how fast it forgets"),
        ),
    ),
)


WELL_CONDITIONED = 4.0  # max |q + k|^2 / sqrt(d) where a few thousand features are enough


def spread(head: HeadQKV) -> float:
    """max over pairs of |q_i + k_j|^2 / sqrt(d): |x + y|^2 for Performer's scaled x = q / d^(1/4)."""
    sums = head.queries[:, None, :] + head.keys[None, :, :]
    return float((sums**2).sum(-1).max() / np.sqrt(head.queries.shape[-1]))


def feature_variance(spread_value: float) -> float:
    """Relative variance of one positive feature's estimate of exp(x.y): exp(|x + y|^2) - 1."""
    return float(np.expm1(spread_value))


def cooled(head: HeadQKV, temperature: float) -> HeadQKV:
    """The head with q and k divided by sqrt(T): scores over T, every |q + k|^2 over T."""
    shrink = 1 / np.sqrt(temperature)
    return replace(head, queries=head.queries * shrink, keys=head.keys * shrink)


def calm_temperature(spread_value: float, target: float = WELL_CONDITIONED) -> int:
    """The smallest power of two T with spread / T <= target (1 when the head is already calm)."""
    return int(2 ** max(0, int(np.ceil(np.log2(max(spread_value, 1e-12) / target)))))


@dataclass(frozen=True)
class Versus:
    """What the page shows for one head: the comparison, the error curves, and how long q + k gets."""

    comparison: EfficientComparison
    curves: dict[str, tuple[list[int], list[float]]]  # Linformer's over kp, Performer's over m
    spread: float  # max over pairs of |q_i + k_j|^2 / sqrt(d): Performer's variance grows like its exp
    calm_temperature: int  # T that brings the spread to WELL_CONDITIONED or below
    calm_spread: float  # the spread at that T


PERFORMER = "Performer (FAVOR+)"


def calm_name(temperature: int) -> str:
    """The curve of the well-conditioned case."""
    return f"Performer, q and k / √{temperature} (T = {temperature})"


def versus_softmax(head: HeadQKV, kp: int, kind: str, m: int) -> Versus:
    """The comparison at the chosen sizes and the curves over every size, the head as trained and cooled."""
    wide = spread(head)
    temperature = calm_temperature(wide)
    calm = cooled(head, temperature)
    curves = {
        "Linformer, random Gaussian E": linformer_curve(head, "random Gaussian"),
        "Linformer, segment means E": linformer_curve(head, "segment means"),
        PERFORMER: performer_curve(head),
    }
    if temperature > 1:  # a head already well conditioned needs no second curve
        curves[calm_name(temperature)] = performer_curve(calm)
    return Versus(compare(head, kp, m, kind), curves, wide, temperature, spread(calm))
