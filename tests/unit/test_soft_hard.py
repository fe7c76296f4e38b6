"""Soft vs hard attention: normalizer properties, the toy retrieval task and its shipped runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import plotly_array

from txviz.core import attention
from txviz.softhard import compare as soft_hard
from txviz.softhard import figures, toy
from txviz.training import soft_hard as training


@pytest.fixture
def scores() -> torch.Tensor:
    """Random distinct scores (2, 3, 5, 7) with a causal mask, as a decoder sees them."""
    s = torch.randn(2, 3, 5, 7, generator=torch.Generator().manual_seed(0)) * 3
    return s.masked_fill(~attention.causal_mask(5, 7), float("-inf"))


def test_sparsemax_rows_sum_to_one_and_are_sparse(scores: torch.Tensor) -> None:
    weights = attention.sparsemax(scores)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5))
    assert (weights >= 0).all()
    assert (weights[torch.isinf(scores)] == 0).all()
    # sparse: with scores spread by 3, most rows keep fewer keys than they could see
    visible = (~torch.isinf(scores)).sum(-1)
    assert ((weights > 0).sum(-1) < visible).float().mean() > 0.5


def test_sparsemax_matches_closed_form_on_two_keys() -> None:
    # two keys with gap d: weights (1+d)/2, (1-d)/2 when |d| < 1, else one-hot
    z = torch.tensor([[0.3, 0.0], [2.0, 0.0]])
    torch.testing.assert_close(attention.sparsemax(z), torch.tensor([[0.65, 0.35], [1.0, 0.0]]))


def test_hard_rows_are_one_hot_at_the_argmax(scores: torch.Tensor) -> None:
    weights = attention.hard(scores)
    assert set(weights.unique().tolist()) == {0.0, 1.0}
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5))
    assert (weights.argmax(-1) == scores.argmax(-1)).all()


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_rows_have_k_non_zeros(k: int) -> None:
    s = torch.randn(4, 6, 9, generator=torch.Generator().manual_seed(k))
    weights = attention.top_k(k)(s)
    assert ((weights > 0).sum(-1) == k).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 6))
    kept = s.topk(k, dim=-1)
    torch.testing.assert_close(weights.gather(-1, kept.indices), torch.softmax(kept.values, -1))


def test_temperature_divides_scores_and_rejects_non_positive() -> None:
    s = torch.tensor([[1.0, 2.0, 4.0]])
    torch.testing.assert_close(attention.temperature_softmax(0.5)(s), torch.softmax(s * 2, -1))
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="positive"):
            attention.temperature_softmax(bad)


def test_batch_queries_ask_for_stored_pairs() -> None:
    config = toy.ToyConfig(n_keys=10, n_pairs=6)
    b = toy.make_batch(config, 32, torch.Generator().manual_seed(1))
    for i in range(32):
        assert len(set(b.keys[i].tolist())) == 6  # distinct keys within an example
        assert sorted(b.queries[i].tolist()) == sorted(b.keys[i].tolist())
        for q, pos, target in zip(b.queries[i], b.target_pos[i], b.targets[i], strict=True):
            assert b.keys[i, pos] == q and b.values[i, pos] == target


def test_example_tokens_are_readable() -> None:
    config = toy.ToyConfig(n_keys=4, n_pairs=2)
    b = toy.Batch(
        keys=torch.tensor([[2, 0]]),
        values=torch.tensor([[7, 3]]),
        queries=torch.tensor([[0, 2]]),
        target_pos=torch.tensor([[1, 0]]),
        targets=torch.tensor([[3, 7]]),
    )
    assert config.n_pairs == 2
    assert toy.example_tokens(b, 0) == (("a?", "c?"), ("c=7", "a=3"))


@pytest.mark.parametrize(
    "kwargs",
    [{"n_pairs": 1}, {"n_pairs": 30}, {"steps": 0}, {"lr": 0.0}, {"lr": -1.0}, {"n_values": 11}],
)
def test_bad_config_is_refused_clearly(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="must"):
        toy.ToyConfig(**kwargs)


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="method must be one of"):
        toy.train("gumbel", toy.ToyConfig(steps=1))


def test_training_is_reproducible_and_restores_threads() -> None:
    config = toy.ToyConfig(steps=12, eval_every=4, eval_size=64)
    threads = torch.get_num_threads()
    seen = []
    first = toy.train("reinforce", config, progress=lambda step, total: seen.append((step, total)))
    second = toy.train("reinforce", config)
    assert first.curves == second.curves
    assert first.curves["step"] == [4, 8, 12]
    assert seen[-1] == (12, 12) and len(seen) == 12
    assert torch.get_num_threads() == threads


def test_training_both_reports_one_progress_over_the_two_runs() -> None:
    config = toy.ToyConfig(steps=4, eval_every=2, eval_size=32)
    seen = []
    runs = toy.train_both(config, progress=lambda done, what: seen.append((done, what)))
    assert list(runs) == list(toy.METHODS)
    assert runs["soft"].curves == toy.train("soft", config).curves  # the same runs as one at a time
    fractions = [done for done, _ in seen]
    assert len(seen) == 8 and fractions == sorted(fractions)
    assert fractions[3] == 0.5 and fractions[-1] == 1.0  # the first run ends halfway
    assert seen[0][1] == "soft: step 1" and seen[-1][1] == "reinforce: step 4"


def test_soft_step_gives_every_parameter_a_gradient() -> None:
    config = toy.ToyConfig(n_keys=8, n_pairs=4)
    torch.manual_seed(0)
    model = toy.KeyValueReader(config)
    batch = toy.make_batch(config, 16, torch.Generator().manual_seed(0))
    loss, _ = toy._training_loss(model, batch, "soft", config)
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_reinforce_step_gives_scores_a_gradient_without_a_soft_path() -> None:
    # the sampled choice is one-hot, so only the log-probability term can reach w_q
    config = toy.ToyConfig(n_keys=8, n_pairs=4, entropy_bonus=0.0)
    torch.manual_seed(0)
    model = toy.KeyValueReader(config)
    batch = toy.make_batch(config, 16, torch.Generator().manual_seed(0))
    loss, ce = toy._training_loss(model, batch, "reinforce", config)
    loss.backward()
    assert model.w_q.weight.grad is not None and model.w_q.weight.grad.abs().sum() > 0
    assert ce.shape == (16, 4)


@pytest.fixture(scope="module")
def shipped() -> dict[str, toy.TrainedRun]:
    return toy.load_runs()


def test_shipped_runs_reach_their_stated_accuracy(shipped: dict[str, toy.TrainedRun]) -> None:
    summary = json.loads((toy.ASSETS_DIR / "runs.json").read_text())
    held_out = toy.eval_batch(shipped["soft"].config)
    for method, run in shipped.items():
        reading = "soft" if method == "soft" else "hard"
        measured = toy.accuracy(run.model, held_out, reading)
        assert measured == pytest.approx(summary[method]["final_accuracy"], abs=1e-6)
        assert measured >= 0.99, method
        for reading in ("soft", "hard"):
            stated = summary[method][f"accuracy_{reading}_reading"]
            assert toy.accuracy(run.model, held_out, reading) == pytest.approx(stated, abs=1e-6)


def test_shipped_curves_start_at_chance_and_soft_learns_first(
    shipped: dict[str, toy.TrainedRun],
) -> None:
    config = shipped["soft"].config
    for run in shipped.values():
        assert run.curves["accuracy"][0] < 0.5  # not solved after the first few steps
        assert len(run.curves["step"]) == config.steps // config.eval_every
    soft, hard = shipped["soft"], shipped["reinforce"]
    assert toy.first_step_reaching(soft, 0.9) < toy.first_step_reaching(hard, 0.9)
    assert toy.first_step_reaching(soft, 1.01) is None
    # REINFORCE drives its policy to one pair per query; softmax training stays a little spread
    assert hard.curves["entropy"][-1] < 0.05 < soft.curves["entropy"][-1]
    text = toy.describe(shipped)
    assert f"Soft reached 90% at step {toy.first_step_reaching(soft, 0.9)}" in text


def test_shipped_attention_maps(shipped: dict[str, toy.TrainedRun]) -> None:
    config = shipped["soft"].config
    batch = toy.eval_batch(config)
    soft, queries, pairs = toy.attention_map(shipped["soft"], example=3)
    hard, _, _ = toy.attention_map(shipped["reinforce"], example=3)
    assert soft.shape == hard.shape == (config.n_pairs, config.n_pairs)
    assert len(queries) == len(pairs) == config.n_pairs
    np.testing.assert_allclose(soft.sum(1), 1.0, rtol=1e-5)
    assert set(np.unique(hard)) == {0.0, 1.0}
    # both attend to the pair each query asks for
    target = batch.target_pos[3].numpy()
    assert (hard.argmax(1) == target).all() and (soft.argmax(1) == target).all()
    assert (soft.max(1) < 1.0).all()  # soft attention never reaches exactly one-hot
    with pytest.raises(ValueError, match="example must be"):
        toy.attention_map(shipped["soft"], example=config.eval_size)


def test_training_command_writes_loadable_runs(tmp_path) -> None:
    assert training.main(["--steps", "5", "--out", str(tmp_path)]) == 0
    runs = toy.load_runs(tmp_path)
    assert set(runs) == set(toy.METHODS)
    assert runs["soft"].config.steps == 5


@pytest.mark.parametrize(
    ("temperature", "k", "message"),
    [
        (0.0, 2, "Temperature must be positive"),
        (-1.0, 2, "Temperature must be positive"),
        (float("nan"), 2, "Temperature must be positive"),
        (1.0, 0, "at least 1"),
        (1.0, 9, "larger than the text's 8 tokens"),
    ],
)
def test_bad_parameters_get_a_clear_message(temperature: float, k: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        soft_hard.NormalizerSettings(temperature, k).check(n_tokens=8)


def test_output_table_reads_one_row_per_normalizer() -> None:
    effect = soft_hard.OutputEffect(
        "decoder", {"softmax": " mat.", "hard": " the"}, {"softmax": 2.34567, "hard": None}, {}
    )
    rows = effect.table({"hard": "hard (argmax)"})
    assert [r["normalizer"] for r in rows] == ["softmax", "hard (argmax)"]
    assert [r["mean next-token loss on the text (nats)"] for r in rows] == [2.346, None]


def test_side_by_side_heatmaps_keep_repeated_tokens_apart() -> None:
    tokens = ("the", "cat", "the")
    weights = np.eye(3, dtype=np.float32)
    figure = figures.heatmaps_of({"a": (weights, tokens, tokens), "b": (weights[::-1], tokens, tokens)})
    data = figure.to_dict()
    assert [t["type"] for t in data["data"]] == ["heatmap", "heatmap"]
    np.testing.assert_array_equal(plotly_array(data["data"][1]["z"]), weights[::-1])
    assert list(data["layout"]["yaxis"]["tickvals"]) == [0, 1, 2]
    assert list(data["layout"]["xaxis2"]["ticktext"]) == list(tokens)
    assert data["layout"]["yaxis"]["title"]["text"] == "query"
    assert data["layout"]["xaxis"]["title"]["text"] == "key"


def test_entropy_and_similarity_bars() -> None:
    values = {"softmax": np.array([[0.5, 1.0], [2.0, 3.0]]), "hard": np.zeros((2, 2))}
    data = figures.entropy_bars(values, layer=1).to_dict()
    assert data["layout"]["title"]["text"] == "Mean attention entropy per head, layer 1"
    assert [t["name"] for t in data["data"]] == ["softmax", "hard"]
    assert list(plotly_array(data["data"][0]["y"])) == [2.0, 3.0]
    assert list(plotly_array(data["data"][0]["x"])) == [0, 1]
    bars = figures.similarity_bars({"softmax": 1.0, "hard": 0.8}).to_dict()["data"][0]
    assert list(plotly_array(bars["y"])) == [1.0, 0.8]


def test_training_curves_plot_each_run(shipped) -> None:
    curves = toy.curves_by_label(shipped)
    data = figures.training_curves(curves, chance=0.1).to_dict()
    assert len(data["data"]) == 2 * len(shipped)  # accuracy and entropy per run
    first = data["data"][0]
    assert list(plotly_array(first["x"])) == shipped["soft"].curves["step"]
    assert list(plotly_array(first["y"])) == shipped["soft"].curves["accuracy"]
    rows = toy.accuracy_rows(shipped)
    assert [r["accuracy, read with argmax"] for r in rows] == [
        toy.accuracy(run.model, toy.eval_batch(run.config), "hard") for run in shipped.values()
    ]
