"""Mixture of experts: routing against a hand recomputation, the balancing loss against its formula."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.block import moe
from txviz.core.threads import torch_threads


def test_each_input_gets_its_top_expert_scaled_by_its_gate():
    torch.manual_seed(0)
    model = moe.MixtureOfExperts(3, 5)
    x, _ = moe.make_data(50, 1)
    routed = model.route(x)
    with torch.no_grad():
        gates = torch.softmax(x @ model.router.weight.T + model.router.bias, -1)
        for i in range(50):
            top = int(gates[i].argmax())
            expected = gates[i, top] * model.experts[top](x[i : i + 1])[0]
            torch.testing.assert_close(routed.output[i], expected)
            assert int(routed.chosen[i]) == top
    torch.testing.assert_close(routed.gates, gates)


def test_balance_loss_is_the_switch_formula():
    gates = torch.tensor([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.2, 0.5, 0.3]])
    chosen = gates.argmax(-1)  # experts 0, 0, 2, 1: shares 1/2, 1/4, 1/4
    mean_gate = [0.4, 0.275, 0.325]
    expected = 3 * (0.5 * mean_gate[0] + 0.25 * mean_gate[1] + 0.25 * mean_gate[2])
    assert moe.balance_loss(gates, chosen).item() == pytest.approx(expected)
    uniform = torch.full((8, 4), 0.25)
    assert moe.balance_loss(uniform, torch.arange(8) % 4).item() == pytest.approx(1.0)  # perfectly balanced


def test_data_follow_each_regions_function():
    x, y = moe.make_data(400, 2)
    u, v = x[:, 0], x[:, 1]
    quadrant = moe.region(x)
    for q, f in enumerate((torch.sin(2 * u), torch.cos(2 * v), u * v / 2, u.abs() - v.abs())):
        torch.testing.assert_close(y[quadrant == q, 0], f[quadrant == q])
    assert set(quadrant.tolist()) == {0, 1, 2, 3}


def test_routing_counts_add_up():
    torch.manual_seed(0)
    config = moe.MoEConfig(held_out=300)
    routed = moe.routing(moe.MixtureOfExperts(4, 8), config)
    np.testing.assert_allclose(routed.by_region.sum(1), 1.0)
    assert routed.load.sum() == pytest.approx(1.0)
    assert np.bincount(routed.chosen, minlength=4)[0] / 300 == pytest.approx(routed.load[0])


def test_a_short_run_the_mixture_beats_the_dense_ffn_of_the_same_compute():
    config = moe.MoEConfig(steps=400, held_out=1000)
    with torch_threads(1):  # tiny batches: a second thread only contends on a shared machine
        scores = {name: moe.train(name, config)[1]["held_out_mse"] for name in moe.MODELS[:2]}
    assert scores[moe.MODELS[1]] < 0.6 * scores[moe.MODELS[0]]
