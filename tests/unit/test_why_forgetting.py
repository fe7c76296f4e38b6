"""RNN forgetting: the Jacobian norms against finite differences and against the chain of step Jacobians."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.why import forgetting, paths


def finite_difference_norms(kind: str, layer, x: torch.Tensor, eps: float = 1e-6) -> np.ndarray:
    """|| d y_n / d x_j || by central differences, one input coordinate at a time, newest first."""
    n, d = x.shape
    columns = np.zeros((n, d, d))
    with torch.no_grad():
        for j in range(n):
            for c in range(d):
                up, down = x.clone(), x.clone()
                up[j, c] += eps
                down[j, c] -= eps
                diff = forgetting.last_output(kind, layer, up) - forgetting.last_output(kind, layer, down)
                columns[j, c] = (diff / (2 * eps)).numpy()
    return np.sqrt((columns**2).sum((1, 2)))[::-1]


@pytest.mark.parametrize("kind", ["rnn", "attention"])
def test_jacobian_norms_match_finite_differences(kind: str):
    layer = paths._layers(kind, 3, 1, 0)[0]
    x = paths._input(7, 0)
    np.testing.assert_allclose(
        forgetting.jacobian_norms(kind, layer, x),
        finite_difference_norms(kind, layer, x),
        rtol=1e-6,
        atol=1e-10,
    )


def test_gru_dependence_is_the_product_of_step_jacobians():
    gru = paths._layers("rnn", 3, 1, 0)[0]
    cell = torch.nn.GRUCell(paths.CHANNELS, paths.CHANNELS).double()
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(cell, name).data.copy_(getattr(gru, f"{name}_l0"))
    x = paths._input(6, 1)
    states = [torch.zeros(paths.CHANNELS, dtype=torch.float64)]
    for t in range(6):
        states.append(cell(x[t][None], states[-1][None])[0].detach())
    jac = torch.autograd.functional.jacobian
    # d h_6 / d x_3 = (dh_6/dh_5)(dh_5/dh_4) (dh_4/dx_3): the path through three steps (k = 2)
    chain = jac(lambda xi: cell(xi[None], states[3][None])[0], x[3])
    for t in (4, 5):
        chain = jac(lambda h, t=t: cell(x[t][None], h[None])[0], states[t]) @ chain
    norms = forgetting.jacobian_norms("rnn", gru, x)
    assert norms[2] == pytest.approx(torch.linalg.norm(chain).item(), rel=1e-9)


def test_the_gru_forgets_and_attention_does_not():
    result = forgetting.forgetting(24, inputs=4)
    assert result.decay_per_step < 0.9 and result.rnn[-1] < 1e-3 * result.rnn[0]
    assert result.attention[-1] > 0.2 * result.attention[1:].mean()  # no decay with distance
    assert result.half_life == pytest.approx(np.log(0.5) / np.log(result.decay_per_step))
    with pytest.raises(paths.PathInputError):
        forgetting.forgetting(1)
