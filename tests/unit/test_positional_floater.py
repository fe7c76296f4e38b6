"""FLOATER's positions: the ODE's flow against scipy's solver, its zero-strength flow against the sinusoid's
formula, the RNN against its recurrence written out, and the comparison table's marks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from txviz.positional import floater
from txviz.positional.encodings import sinusoidal_encoding


def formula(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """P[i, 2j] = sin(i / C^(2j/d)), P[i, 2j + 1] = cos(i / C^(2j/d)), entry by entry."""
    out = np.empty((n, d))
    for i in range(n):
        for col in range(d):
            angle = i / base ** (2 * (col // 2) / d)
            out[i, col] = np.sin(angle) if col % 2 == 0 else np.cos(angle)
    return out


@pytest.mark.parametrize("d", [32, 7, 1])
def test_the_three_matrices_have_n_rows_of_d_and_the_sinusoid_is_the_formula(d):
    n = 40
    sinusoid = sinusoidal_encoding(n, d)
    np.testing.assert_allclose(sinusoid, formula(n, d), atol=1e-12)
    field = floater.neural_field(d, seed=3)
    assert floater.ode_positions(n, d, field, 0.1).shape == (n, d)
    assert floater.rnn_positions(n, d, seed=3).positions.shape == (n, d)
    # With no learned part the flow is the sinusoid: each (sin, cos) pair solves d/dt (s, c) = ω (c, −s).
    np.testing.assert_allclose(floater.ode_positions(n, d, field, 0.0), formula(n, d), atol=1e-10)


def test_the_ode_converges_to_scipys_solution_at_first_order():
    d, n, strength, seed = 16, 30, 0.3, 1
    field = floater.neural_field(d, seed)
    omega = 1 / 10000.0 ** (np.arange(0, d, 2) / d)

    def rhs(t, p):  # A p + strength h(t, p), written out independently of the module's rotations
        linear = np.empty_like(p)
        linear[0::2], linear[1::2] = omega * p[1::2], -omega * p[0::2]
        return linear + strength * field(t, p)

    p0 = np.tile([0.0, 1.0], d // 2)
    exact = solve_ivp(rhs, (0, n - 1), p0, t_eval=np.arange(n), rtol=1e-11, atol=1e-11).y.T
    errors = [
        np.abs(floater.ode_positions(n, d, field, strength, substeps=s) - exact).max() for s in (20, 40, 80)
    ]
    assert errors[2] < 0.01 * np.abs(exact).max()
    for coarse, fine in zip(errors, errors[1:], strict=False):
        assert 1.8 < coarse / fine < 2.2  # halving the step halves the error: Euler's first order


def test_the_ode_positions_move_continuously_and_do_not_depend_on_the_length():
    d, strength = 32, 0.2
    field = floater.neural_field(d, seed=0)
    p = floater.ode_positions(60, d, field, strength)
    # |p_j(i + 1) − p_j(i)| ≤ ∫ |ω_j p_j'(t) + strength h_j| dt ≤ ω_max max |p| + strength (|h| < 1, ω ≤ 1)
    bound = np.abs(p).max() * 1.05 + strength
    assert floater.step_sizes(p).max() <= bound
    fine = floater.ode_positions(60, d, field, strength, substeps=40)
    assert np.abs(fine - p).max() < 0.1 * bound  # a finer integration moves the positions little
    np.testing.assert_array_equal(floater.ode_positions(90, d, field, strength)[:60], p)  # inductive
    assert np.abs(p - sinusoidal_encoding(60, d)).max() > 0.1  # the learned part did bend it


def test_the_rnn_is_its_recurrence_and_runs_to_any_length():
    n, d = 50, 12
    run = floater.rnn_positions(n, d, seed=5)
    expected = [np.zeros(d)]
    for _ in range(n - 1):  # p_i = tanh(W p_(i−1) + u), one step per position
        expected.append(np.tanh(run.w @ expected[-1] + run.u))
    np.testing.assert_allclose(run.positions, np.array(expected), atol=1e-14)
    assert np.abs(run.positions).max() < 1
    np.testing.assert_array_equal(floater.rnn_positions(80, d, seed=5).positions[:n], run.positions)
    assert run.w.size + run.u.size == d * d + d  # its parameters do not grow with n


def test_the_comparison_table_has_the_papers_marks_and_rotary_as_ours():
    rows = {r["method"].split(" (")[0]: r for r in floater.COMPARISON}
    assert list(rows) == ["sinusoidal", "learned", "relative", "rotary", "FLOATER"]
    marks = {k: (r["inductive"], r["data-driven"], r["parameter-efficient"]) for k, r in rows.items()}
    assert marks["FLOATER"] == ("✓", "✓", "✓")
    assert marks["sinusoidal"] == ("✓", "✗", "✓") and marks["learned"] == ("✗", "✓", "✗")
    assert "our row" in rows["rotary"]["method"]
    field = floater.neural_field(32)
    assert field.parameters == 16 * 32 + 16 + 16 + 32 * 16 + 32  # the same at every length
