"""Each head's OV and QK circuits summarised from the weights alone (Elhage et al. 2021).

OV copying: with W_E (V, D) the token embedding, W_U (D, V) the unembedding, the head's OV circuit on
tokens is M = W_E W_V W_O W_U (V x V). Its copying score is sum(eig M) / sum(|eig M|) in [-1, 1]
(Elhage et al.; complex eigenvalues come in conjugate pairs, so the sum is real): near 1, a token
the head attends to raises its own logit. The positive share, sum(max(Re eig, 0)) / sum(|eig|) in
[0, 1], counts only the eigenvalues that copy. M = A B with A = W_E W_V (V x d_head) and B = W_O W_U
(d_head x V), and AB and BA have the same nonzero eigenvalues, so both are read from the d_head x
d_head matrix B A = W_O (W_U W_E) W_V, with W_U W_E (D x D) formed once per model.

QK copying: the same score of the token-to-token QK circuit W_E W_Q W_K^T W_E^T (a query token
against key tokens), read from W_K^T (W_E^T W_E) W_Q: near 1, a token attends to keys of the same
token. Rotary and learned positions are left out: this is the circuit at relative distance 0.

Approximations, as TransformerLens's ``fold_ln``: each head's pre-norm gain is folded into W_Q, W_K
and W_V (txviz.whyattend.composition.head_weights), the final norm's gain into W_U; the norms'
division by the stream's scale is left out (a positive factor: it moves no ratio above) and so is a
LayerNorm's centring (not a scale: an approximation). The norms of other block forms (post-LN,
parallel, sandwich) are left out, and so is
the dense layer and norm a masked-LM head applies before its decoder (an encoder's unembedding here is
that decoder alone). Grouped query heads read the key and value head they share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import UserError
from txviz.core.layouts import cached_layout
from txviz.whyattend.composition import head_weights


@dataclass(frozen=True)
class Circuits:
    """[layer, head] scores from the weights; NaN where the model has no unembedding (OV only)."""

    ov_copying: np.ndarray  # sum(eig) / sum(|eig|) of W_E W_V W_O W_U
    ov_positive: np.ndarray  # sum(max(Re eig, 0)) / sum(|eig|)
    qk_copying: np.ndarray  # sum(eig) / sum(|eig|) of W_E W_Q W_K^T W_E^T
    notice: str = ""  # what could not be computed, or the approximation that applies


def copying_score(eigenvalues: np.ndarray) -> float:
    """sum(eig) / sum(|eig|): 1 when every eigenvalue is positive, -1 when every one is negative."""
    total = np.abs(eigenvalues).sum()
    return float(eigenvalues.sum().real / total) if total > 0 else float("nan")


def positive_share(eigenvalues: np.ndarray) -> float:
    """The share of |eig| that positive real parts make up: sum(max(Re eig, 0)) / sum(|eig|)."""
    total = np.abs(eigenvalues).sum()
    return float(np.clip(eigenvalues.real, 0, None).sum() / total) if total > 0 else float("nan")


def embedding(model) -> torch.Tensor:
    """W_E (V, D) in float64 on the CPU."""
    return model.get_input_embeddings().weight.detach().double().cpu()


def unembedding(model) -> torch.Tensor | None:
    """W_U (D, V) in float64 with the final norm's gain folded in, or None without an output head.

    An encoder's masked-LM decoder counts (get_output_embeddings); a bare encoder has none.
    """
    try:
        head = model.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        head = None
    if head is None or getattr(head, "weight", None) is None:
        return None
    w_u = head.weight.detach().double().cpu().T  # nn.Linear keeps (V, D)
    layout = cached_layout(model)
    if layout.final_norm and layout.form != "post-LN":
        gain = getattr(model.get_submodule(layout.final_norm), "weight", None)
        if gain is not None:
            w_u = gain.detach().double().cpu()[:, None] * w_u
    return w_u


def _eig(matrix: torch.Tensor) -> np.ndarray:
    return np.linalg.eigvals(matrix.numpy())


def circuits(model, stack: str | None = None) -> Circuits:
    """Every head's OV and QK copying scores from the weights (see the module's docstring)."""
    layout = cached_layout(model)
    if layout.record is None:
        raise UserError(
            "txviz cannot place this model's query, key, value and output projections, so it cannot "
            "read its heads' circuits; the atlas's attention scores do not need them."
        )
    if layout.record.attention.qkv_per_head:
        raise UserError(
            "This model interleaves its fused query, key and value rows head by head; txviz does not read "
            "its heads' circuits yet. The atlas's attention scores do not need them."
        )
    stack = stack or layout.last_stack
    n_layers, n_heads = layout.stack(stack).n_layers, model.config.num_attention_heads
    w_e, w_u = embedding(model), unembedding(model)
    tokens = w_e.T @ w_e  # (D, D): W_E^T W_E, the QK circuit's token-to-token middle
    through = None if w_u is None else w_u @ w_e  # (D, D): W_U W_E, the OV circuit's middle
    ov = np.full((n_layers, n_heads), np.nan, dtype=np.float32)
    positive, qk = ov.copy(), ov.copy()
    for layer in range(n_layers):
        for head in range(n_heads):
            parts = head_weights(model, layer, head, stack)
            q, k, v, o = (t.double() for t in (parts.q, parts.k, parts.v, parts.o))
            qk[layer, head] = copying_score(_eig(k.T @ tokens @ q))
            if through is not None:
                values = _eig(o @ through @ v)
                ov[layer, head], positive[layer, head] = copying_score(values), positive_share(values)
    notice = "" if w_u is not None else "This model has no unembedding: its OV copying scores are blank."
    return Circuits(ov, positive, qk, notice)
