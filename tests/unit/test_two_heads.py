"""The several-heads toy: the data, the layer against a numpy recomputation, and a short training run."""

from __future__ import annotations

import json

import numpy as np
import torch
from scipy.special import softmax

from txviz.core.threads import torch_threads
from txviz.selfattention import twoheads as th


def test_batches_mark_one_subject_and_one_object_and_answer_their_symbols():
    batch = th.make_batch(500, 3)
    roles = batch.roles.numpy()
    assert ((roles == th.SUBJECT).sum(1) == 1).all() and ((roles == th.OBJECT).sum(1) == 1).all()
    assert (roles[:, -1] == th.QUERY).all()
    symbols = batch.symbols.numpy()
    np.testing.assert_array_equal(batch.answers[:, 0], symbols[roles == th.SUBJECT])
    np.testing.assert_array_equal(batch.answers[:, 1], symbols[roles == th.OBJECT])
    assert torch.equal(th.make_batch(500, 3).symbols, batch.symbols)  # seeded


def test_forward_matches_a_numpy_recomputation():
    torch.manual_seed(0)
    model = th.HeadsToy(2).eval()
    batch = th.make_batch(3, 1)
    logits, weights = model(batch.symbols, batch.roles)
    p = {name: t.detach().numpy().astype(np.float64) for name, t in model.state_dict().items()}
    for i in range(3):
        role = p["role.weight"][batch.roles[i].numpy()]
        value = p["symbol.weight"][batch.symbols[i].numpy()] @ p["value.weight"].T + p["value.bias"]
        q = role[-1] @ p["query.weight"].T + p["query.bias"]
        k = role @ p["key.weight"].T + p["key.bias"]
        outputs = []
        for h in range(2):
            part = slice(8 * h, 8 * (h + 1))
            a = softmax(k[:, part] @ q[part] / np.sqrt(8))
            np.testing.assert_allclose(weights[i, h].detach().numpy(), a, atol=1e-6)
            outputs.append(a @ value[:, part])
        expected = np.concatenate(outputs) @ p["readout.weight"].T + p["readout.bias"]
        np.testing.assert_allclose(logits[i].detach().numpy().ravel(), expected, atol=1e-5)


def test_weights_depend_on_the_roles_only():
    torch.manual_seed(0)
    model = th.HeadsToy(1).eval()
    batch = th.make_batch(2, 5)
    other = (batch.symbols + 3) % 8
    torch.testing.assert_close(model(batch.symbols, batch.roles)[1], model(other, batch.roles)[1])


def test_a_short_run_two_heads_answer_both_one_head_cannot():
    config = th.TwoHeadsConfig(steps=250, held_out=1000)
    with torch_threads(1):  # tiny batches: a second thread only contends on a shared machine
        _, one = th.train(1, config)
        _, two = th.train(2, config)
    assert two["both"] > 0.95
    assert one["both"] < 0.3  # chance for the weaker answer is 1/8
    assert max(one["subject"], one["object"]) > 0.9


def test_task_text_counts_the_symbols_the_batches_hold():
    config = th.TwoHeadsConfig(**json.loads((th.ASSETS_DIR / "runs.json").read_text())["config"])
    assert config == th.TwoHeadsConfig()  # the page's text describes the shipped run
    batch = th.make_batch(200, 0, config)
    with_symbols = int((batch.roles != th.QUERY).sum(1)[0])  # the query token carries none
    text = th.task_text(config)
    assert f"{with_symbols} random symbols, each one of {config.symbols}" in text
    assert f"({batch.symbols.shape[1]} tokens in all)" in text
    assert "Vaswani et al. 2017, §3.2.2" in text and "UDL 12.6" not in text
