"""A toy self-attention in numpy, step by step, in the notation of Prince's Understanding Deep Learning.

Tokens are the rows of X (N x D), as in the rest of txviz: rows are queries, columns are keys,
and each row of the attention matrix sums to one. The book writes tokens as columns
(Softmax[K^T Q]), where each column sums to one: the same numbers, transposed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from txviz.core.errors import UserError

SOFTMAX_AXIS_NOTE = (
    "Softmax runs along each row (over the keys): every row sums to one. Prince's book writes "
    "tokens as columns, Softmax[KᵀQ], where each column sums to one; it is the same matrix transposed."
)
MAX_TOKENS = 16
MAX_DIM = 32


class ToyAttentionError(UserError):
    """Bad toy input, with a message fit for the user."""


@dataclass(frozen=True)
class ToyConfig:
    """Size and seed of the toy example."""

    n_tokens: int = 3  # N
    d_model: int = 4  # D
    n_heads: int = 2  # H; each head has D / H dimensions
    seed: int = 0

    def __post_init__(self) -> None:
        check_sizes(self.n_tokens, self.d_model, self.n_heads)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class HeadWeights:
    """Parameters of one head: q = beta_q + Omega_q x, and the same for k and v."""

    omega_q: np.ndarray  # (d_head, D)
    beta_q: np.ndarray  # (d_head,)
    omega_k: np.ndarray  # (d_head, D)
    beta_k: np.ndarray  # (d_head,)
    omega_v: np.ndarray  # (d_head, D)
    beta_v: np.ndarray  # (d_head,)

    @property
    def d_head(self) -> int:
        return self.omega_q.shape[0]


@dataclass(frozen=True)
class HeadResult:
    """Every intermediate of one head of self-attention."""

    queries: np.ndarray  # (N, d_head) Q = X Omega_q^T + beta_q
    keys: np.ndarray  # (N, d_head)
    values: np.ndarray  # (N, d_head)
    scores: np.ndarray  # (N, N) [query, key] Q K^T
    scaled_scores: np.ndarray  # (N, N) Q K^T / sqrt(d_head), or Q K^T when unscaled
    weights: np.ndarray  # (N, N) softmax of each row: row n sums to one
    output: np.ndarray  # (N, d_head) weights @ V
    scale: float  # the divisor: sqrt(d_head), or 1


@dataclass(frozen=True)
class MultiHeadResult:
    """Heads side by side, their outputs concatenated and mixed by Omega_c."""

    heads: tuple[HeadResult, ...]
    concatenated: np.ndarray  # (N, H * d_head) [Sa_1 | ... | Sa_H]
    omega_c: np.ndarray  # (D, H * d_head)
    output: np.ndarray  # (N, D) concatenated @ Omega_c^T


def check_sizes(n_tokens: int, d_model: int, n_heads: int = 1) -> None:
    """Raise ToyAttentionError with a readable message unless the sizes make a toy."""
    if n_tokens < 1 or n_tokens > MAX_TOKENS:
        raise ToyAttentionError(f"N must be between 1 and {MAX_TOKENS} tokens (got {n_tokens}).")
    if d_model < 1 or d_model > MAX_DIM:
        raise ToyAttentionError(f"D must be between 1 and {MAX_DIM} dimensions (got {d_model}).")
    if n_heads < 1 or d_model % n_heads:
        raise ToyAttentionError(
            f"D = {d_model} does not split evenly into {n_heads} heads: pick H dividing D."
        )


def check_input(x: np.ndarray) -> np.ndarray:
    """X as a float64 (N, D) array of finite numbers, or a ToyAttentionError."""
    try:
        array = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ToyAttentionError("Every entry of X must be a number.") from error
    if array.ndim != 2:
        raise ToyAttentionError(f"X must be a table of N rows and D columns (got shape {array.shape}).")
    check_sizes(array.shape[0], array.shape[1])
    if not np.isfinite(array).all():
        raise ToyAttentionError("Every entry of X must be a finite number (no blanks or infinities).")
    return array


def toy_input(config: ToyConfig) -> np.ndarray:
    """Seeded inputs rounded to one decimal so they can be read and edited; (N, D)."""
    rng = np.random.default_rng(config.seed)
    return np.round(rng.normal(size=(config.n_tokens, config.d_model)), 1)


def toy_heads(config: ToyConfig) -> tuple[HeadWeights, ...]:
    """Seeded weights and biases of every head, Omega ~ N(0, 1/D) so scores stay readable."""
    rng = np.random.default_rng(config.seed + 1)
    d, dh = config.d_model, config.d_head

    def matrix() -> np.ndarray:
        return np.round(rng.normal(scale=1 / np.sqrt(d), size=(dh, d)), 2)

    def bias() -> np.ndarray:
        return np.round(rng.normal(scale=0.1, size=dh), 2)

    return tuple(
        HeadWeights(matrix(), bias(), matrix(), bias(), matrix(), bias()) for _ in range(config.n_heads)
    )


def toy_omega_c(config: ToyConfig) -> np.ndarray:
    """Seeded output mixing matrix Omega_c (W_o in code); (D, H * d_head)."""
    rng = np.random.default_rng(config.seed + 2)
    d = config.d_model
    return np.round(rng.normal(scale=1 / np.sqrt(d), size=(d, d)), 2)


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Softmax along the last axis (each row sums to one; scipy shifts by the row max for stability)."""
    from scipy.special import softmax  # imported on use, like the rest of scipy here

    return softmax(scores, axis=-1)


def self_attention_head(x: np.ndarray, head: HeadWeights, scaled: bool = True) -> HeadResult:
    """One head in matrix form: Softmax(Q K^T / sqrt(d_head)) V."""
    x = check_input(x)
    if head.omega_q.shape[1] != x.shape[1]:
        raise ToyAttentionError(f"The weights expect D = {head.omega_q.shape[1]}, X has {x.shape[1]}.")
    queries = x @ head.omega_q.T + head.beta_q  # (N, d_head)
    keys = x @ head.omega_k.T + head.beta_k
    values = x @ head.omega_v.T + head.beta_v
    scores = queries @ keys.T  # (N, N) [query, key]
    scale = float(np.sqrt(head.d_head)) if scaled else 1.0
    weights = softmax_rows(scores / scale)
    return HeadResult(queries, keys, values, scores, scores / scale, weights, weights @ values, scale)


def self_attention_loop(x: np.ndarray, head: HeadWeights, scaled: bool = True) -> np.ndarray:
    """The same head token by token, as the book's sums: sa_n = sum_m a[x_m, x_n] v_m; (N, d_head)."""
    x = check_input(x)
    scale = np.sqrt(head.d_head) if scaled else 1.0
    values = [head.beta_v + head.omega_v @ x_m for x_m in x]
    keys = [head.beta_k + head.omega_k @ x_m for x_m in x]
    outputs = []
    for x_n in x:  # exp and sum written out on purpose: the book's formula, checked against the matrix form
        q_n = head.beta_q + head.omega_q @ x_n
        exps = [np.exp(float(k_m @ q_n) / scale) for k_m in keys]
        total = sum(exps)
        outputs.append(sum((e / total) * v_m for e, v_m in zip(exps, values, strict=True)))
    return np.array(outputs)


def routing(result: HeadResult, query: int) -> np.ndarray:
    """What each value sends to one output: row m is a[query, m] * v_m; (N, d_head), sums to output."""
    return result.weights[query][:, None] * result.values


def multi_head_attention(
    x: np.ndarray,
    heads: tuple[HeadWeights, ...],
    omega_c: np.ndarray,
    scaled: bool = True,
) -> MultiHeadResult:
    """MhSa[X] = [Sa_1 | ... | Sa_H] Omega_c^T: heads run side by side, then are mixed."""
    results = tuple(self_attention_head(x, head, scaled) for head in heads)
    concatenated = np.concatenate([r.output for r in results], axis=1)  # (N, H * d_head)
    if omega_c.shape[1] != concatenated.shape[1]:
        raise ToyAttentionError(
            f"Omega_c has {omega_c.shape[1]} columns but the heads give {concatenated.shape[1]}."
        )
    return MultiHeadResult(results, concatenated, omega_c, concatenated @ omega_c.T)


@dataclass(frozen=True)
class RealQueryStep:
    """One query of one head of a real model, recomputed from its captured query and keys."""

    query_pos: int
    query_token: str
    key_tokens: tuple[str, ...]
    query: np.ndarray  # (d_head,) as the model computed it (after RoPE for Llama)
    keys: np.ndarray  # (K, d_head)
    dots: np.ndarray  # (K,) q . k
    scale: float  # sqrt(d_head)
    scores: np.ndarray  # (K,) q . k / sqrt(d_head), -inf where the model masks the key
    weights: np.ndarray  # (K,) softmax of scores, recomputed here
    captured_scores: np.ndarray  # (K,) the scores the model used
    captured_weights: np.ndarray  # (K,) the explorer's heatmap row
    masked: np.ndarray  # (K,) bool, True where the model's mask hides the key

    @property
    def max_weight_difference(self) -> float:
        """Largest gap between the recomputed and the captured weights."""
        return float(np.abs(self.weights - self.captured_weights).max())

    @property
    def max_score_difference(self) -> float:
        """Largest gap between recomputed and captured scores over the keys not masked."""
        keep = ~self.masked
        return float(np.abs(self.scores[keep] - self.captured_scores[keep]).max())


def real_query_step(trace, layer: int, head: int, query_pos: int) -> RealQueryStep:
    """Recompute q . k / sqrt(d_head) and its softmax for one query of a captured trace."""
    if trace.queries is None or trace.keys is None or trace.scores is None:
        raise ToyAttentionError("This trace recorded no queries, keys and scores.")
    if not (0 <= layer < trace.n_layers and 0 <= head < trace.n_heads):
        raise ToyAttentionError(f"Layer {layer}, head {head} is outside this model.")
    if not 0 <= query_pos < len(trace.query_tokens):
        raise ToyAttentionError(f"Query position {query_pos} is outside the text.")
    query = trace.queries[layer, head, query_pos].astype(np.float64)  # (d_head,)
    keys = trace.keys[layer, head].astype(np.float64)  # (K, d_head)
    captured_scores = trace.scores[layer, head, query_pos].astype(np.float64)
    masked = np.isneginf(captured_scores)  # the model's own mask: causal, padding
    dots = keys @ query
    scale = float(np.sqrt(query.shape[0]))
    scores = np.where(masked, -np.inf, dots / scale)
    return RealQueryStep(
        query_pos=query_pos,
        query_token=trace.query_tokens[query_pos],
        key_tokens=tuple(trace.key_tokens),
        query=query,
        keys=keys,
        dots=dots,
        scale=scale,
        scores=scores,
        weights=softmax_rows(scores),
        captured_scores=captured_scores,
        captured_weights=trace.weights[layer, head, query_pos],
        masked=masked,
    )


def vector_text(vector: np.ndarray) -> str:
    """A short vector as text with three decimals."""
    return "[" + ", ".join(f"{v:.3f}" for v in vector) + "]"


def weighted_sum_rows(result: HeadResult, query: int, tokens: list[str]) -> list[dict]:
    """One output as a table: each key's weight, its value, and what it contributes."""
    contributions = routing(result, query)  # (N, d_head)
    return [
        {
            "key": tokens[m],
            "weight a[n, m]": float(result.weights[query, m]),
            "value v_m": vector_text(result.values[m]),
            "a · v_m": vector_text(contributions[m]),
        }
        for m in range(len(tokens))
    ]


def real_step_rows(step: RealQueryStep) -> list[dict]:
    """The real query's arithmetic per key, recomputed next to what the model captured."""
    return [
        {
            "position": m,
            "key": token,
            "q · k": float(step.dots[m]),
            "q · k / √d": None if step.masked[m] else float(step.scores[m]),
            "captured score": None if step.masked[m] else float(step.captured_scores[m]),
            "softmax (recomputed)": float(step.weights[m]),
            "captured weight": float(step.captured_weights[m]),
        }
        for m, token in enumerate(step.key_tokens)
    ]
