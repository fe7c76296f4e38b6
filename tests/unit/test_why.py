"""Why attention: Jacobian receptive fields against the formulas, FLOPs counted against the textbook."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.core.threads import torch_threads
from txviz.why import cost, paths, table

CASES = [(n, k) for n in (1, 2, 5, 9, 16) for k in (2, 3, 5)] + [(4, 9), (23, 3), (32, 2)]


def expected_grid(kind: str, n: int, k: int, depth: int) -> np.ndarray:
    """Receptive field by formula: which x_j output i reads after `depth` layers (steps)."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    if kind == "attention":
        return np.ones((n, n), bool)
    back = {"conv": depth * (k - 1), "dilated": k**depth - 1, "rnn": depth - 1}[kind]
    return (j <= i) & (j >= i - back)


@pytest.mark.parametrize("kind", paths.KINDS)
@pytest.mark.parametrize(("n", "k"), CASES)
def test_measured_path_length_is_the_formula(kind: str, n: int, k: int):
    assert paths.measured_depth(kind, n, k) == paths.formula_depth(kind, n, k)


@pytest.mark.parametrize("kind", paths.KINDS)
@pytest.mark.parametrize(("n", "k"), [(7, 2), (10, 3), (12, 4)])
def test_every_layer_grid_is_the_receptive_field(kind: str, n: int, k: int):
    grids = paths.dependence(kind, n, k, depth=4)
    for depth, grid in enumerate(grids, start=1):
        np.testing.assert_array_equal(grid, expected_grid(kind, n, k, depth), err_msg=f"{kind} depth {depth}")


@pytest.mark.parametrize("kind", ["conv", "dilated", "attention"])
def test_chained_layer_jacobians_match_the_whole_stack(kind: str):
    chained = paths.dependence(kind, 9, 2, depth=3)
    direct = paths.dependence(kind, 9, 2, depth=3, direct=True)
    np.testing.assert_array_equal(chained, direct)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 17, 40, 64])
def test_attention_connects_everything_in_one_layer(n: int):
    grid = paths.dependence("attention", n, 3, depth=1)[0]
    assert grid.all()
    assert (paths.path_lengths("attention", n) == 1).all()


def test_path_length_matrix_of_the_rnn_counts_steps():
    lengths = paths.path_lengths("rnn", 6)
    i, j = np.indices((6, 6))
    np.testing.assert_array_equal(lengths, np.where(j <= i, i - j + 1, 0))


def test_the_books_example_x1_and_x5():
    steps = paths.pair_steps("conv", 5, 3, 1, 5)
    assert [s.span for s in steps] == [5, 3, 1]
    assert (steps[1].left, steps[1].right) == (3, 5)
    assert steps[-1].depth == 2 and steps[-1].left == 5  # y_5 reads x_1..x_5 after two layers


@pytest.mark.parametrize(
    ("n", "k", "message"), [(0, 3, "at least 1"), (8, 1, "at least 2"), (65, 3, "at most")]
)
def test_bad_sizes_raise_a_user_error(n: int, k: int, message: str):
    with pytest.raises(paths.PathInputError, match=message):
        paths.dependence("conv", n, k)


def test_kernel_larger_than_n_is_noticed_and_still_measured():
    assert "larger than n = 4" in paths.kernel_notice(4, 9)
    assert paths.kernel_notice(9, 4) == ""
    assert paths.measured_depth("conv", 4, 9) == 1
    assert paths.dependence("conv", 4, 9)[0].sum() == 10  # lower triangle: everything it can read


@pytest.mark.parametrize("kind", cost.LAYERS)
@pytest.mark.parametrize(("n", "d", "k"), [(16, 8, 3), (100, 64, 5), (7, 33, 2)])
def test_counted_flops_are_the_textbook_formula(kind: str, n: int, d: int, k: int):
    assert cost.count_flops(kind, n, d, k) == cost.formula_flops(kind, n, d, k)


def test_sweep_slopes_and_crossing():
    by_n = cost.sweep("n", (8, 16, 32, 64, 128), 32, budget_s=0.5)
    assert cost.slope(by_n.sizes, by_n.flops["attention"]) == pytest.approx(2.0)
    assert cost.slope(by_n.sizes, by_n.flops["rnn"]) == pytest.approx(1.0)
    assert cost.crossing(by_n.sizes, by_n.flops["attention"], by_n.flops["rnn"]) == pytest.approx(32)
    assert cost.crossing(by_n.sizes, by_n.flops["attention"], by_n.flops["conv"]) == pytest.approx(
        48, rel=0.01
    )
    assert all(t > 0 for values in by_n.seconds.values() for t in values)
    by_d = cost.sweep("d", (8, 16, 32), 16, kinds=("conv", "rnn", "attention"), budget_s=0.3)
    assert cost.slope(by_d.sizes, by_d.flops["conv"]) == pytest.approx(2.0)
    assert cost.slope(by_d.sizes, by_d.flops["attention"]) == pytest.approx(1.0)
    assert cost.crossing((1, 2), (1, 2), (3, 4)) is None


def test_thread_setting_is_restored():
    before = torch.get_num_threads()
    times = cost.thread_times(32, 16, budget_s=0.2)
    assert torch.get_num_threads() == before
    assert set(times.one) == {"conv", "rnn", "attention"} and times.speedup("rnn") > 0
    with pytest.raises(RuntimeError), torch_threads(1):
        assert torch.get_num_threads() == 1
        raise RuntimeError
    assert torch.get_num_threads() == before


def test_rebuilt_table_has_the_books_entries_and_ours():
    by_n = cost.sweep("n", (8, 16, 32), 16, kinds=("conv", "rnn", "attention"), budget_s=0.2)
    by_d = cost.sweep("d", (8, 16, 32), 16, kinds=("conv", "rnn", "attention"), budget_s=0.2)
    threads = cost.thread_times(16, 8, budget_s=0.1)
    depths = {kind: paths.measured_depth(kind, 8, 3) for kind in paths.KINDS}
    rows = table.rebuilt_table(by_n, by_d, threads, depths, 8, 3)
    # Table 15.1 lists O(log_k n) for convolutions; the book's text gives O(n/k) for contiguous kernels
    assert [r["maximum path length (book, Table 15.1)"] for r in rows] == [
        "O(log_k n)",
        "O(log_k n)",
        "O(n)",
        "O(1)",
    ]
    assert [r["maximum path length (book, its text)"][:6] for r in rows] == [
        "O(n/k)",
        "O(log_",
        "O(n), ",
        "O(1), ",
    ]
    assert [r["measured at n = 8, k = 3"] for r in rows] == [
        "4 layers",
        "2 layers",
        "8 recurrent steps",
        "1 layer",
    ]
    assert rows[3]["FLOPs measured: grow as"] == "n^2.00 · d^1.00"
    assert rows[0]["FLOPs measured: grow as"] == "n^1.00 · d^2.00"
