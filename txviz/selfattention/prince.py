"""Prince's Fig. 12.1 (Understanding Deep Learning) as a toy head whose weights give the book's numbers.

The figure shows the attention of the first two outputs over three inputs: a[x1, x1], a[x2, x1],
a[x3, x1] = 0.1, 0.3, 0.6 and a[x1, x2], a[x2, x2], a[x3, x2] = 0.5, 0.2, 0.3. Softmax ignores a
constant added to a row, so a query gives those weights exactly when its scaled dot products with
the keys equal the log-weights plus any constant: a linear system, solved by least squares.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from txviz.selfattention.toy import HeadWeights, ToyConfig, toy_heads, toy_input

CONFIG = ToyConfig(n_tokens=3, d_model=4, n_heads=1, seed=0)
# Rows are queries (outputs), columns keys (inputs): row n is a[x_1..x_3, x_n] in the book's notation.
# The caption gives numbers for the first two outputs only; for the third (panel c) it says "different
# again", so here the third attends evenly, a choice of ours.
TARGET = np.array([[0.1, 0.3, 0.6], [0.5, 0.2, 0.3], [1 / 3, 1 / 3, 1 / 3]])
NOTE = (
    "Prince's Fig. 12.1: the inputs, keys and values are the seed-0 toy's; the query weights Ω_q, β_q "
    "are solved (numpy least squares) so that softmax(q·k/√d) gives the book's attention: 0.1, 0.3, 0.6 "
    "for the first output and 0.5, 0.2, 0.3 for the second. For the third output, panel (c), the caption "
    "gives no numbers, only that its weighting is different again; here it attends evenly. Turning the "
    "scaling off re-solves Ω_q and β_q, so the attention weights stay the book's: what changes is the "
    "query weights and the raw scores Q Kᵀ (each row of the softmax's input shifts by a constant, which "
    "softmax ignores). Editing X changes the weights."
)
ELSEWHERE = (
    "Prince's Fig. 12.1 applies to the first tab only: this tab uses the seeded toy with the preset's "
    "3 tokens, 4 dimensions and seed 0, not the solved query weights."
)


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An exact solution of the under-determined a @ s = b (the shortest one), checked."""
    solution, *_ = np.linalg.lstsq(a, b, rcond=None)
    if not np.allclose(a @ solution, b, atol=1e-9):
        raise ArithmeticError("The system has no exact solution: the keys or inputs are degenerate.")
    return solution


def figure_12_1(scaled: bool = True) -> tuple[np.ndarray, HeadWeights]:
    """Inputs X (3 x 4) and a head whose attention is Fig. 12.1's (the scale as the toy's toggle)."""
    x = toy_input(CONFIG)
    head = toy_heads(CONFIG)[0]
    keys = x @ head.omega_k.T + head.beta_k  # (3, d)
    scale = np.sqrt(head.d_head) if scaled else 1.0
    ones = np.ones((len(x), 1))
    # q_n . k_m / scale + c_n = log a[n, m]: unknowns q_n and the free constant c_n, per query row
    per_query = _solve(np.hstack([keys / scale, ones]), np.log(TARGET).T)  # (d + 1, 3)
    queries = per_query[:-1].T  # (3, d)
    # X Omega_q^T + beta_q = Q: unknowns Omega_q^T and beta_q, one column per query dimension
    weights = _solve(np.hstack([x, ones]), queries)  # (D + 1, d)
    return x, replace(head, omega_q=weights[:-1].T, beta_q=weights[-1])
