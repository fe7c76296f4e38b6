"""The audit's small notes: pooling's invariance measured on the toy, and the one-line notes (GShard beside
Switch, Serrano & Smith and Brunner et al. on attention as explanation, why the windowed GRU looks local)
present where they belong."""

from __future__ import annotations

import numpy as np
from conftest import ROOT

from txviz.block import moe
from txviz.selfattention import equivariance as eq
from txviz.selfattention import toy as ta


def test_mean_pooling_after_equivariant_attention_is_permutation_invariant():
    config = ta.ToyConfig(5, 8, 2, 3)
    permutation = eq.seeded_permutation(5, 7)
    check = eq.toy_check(config, permutation, positions=False)
    x = ta.toy_input(config)
    heads, omega_c = ta.toy_heads(config), ta.toy_omega_c(config)
    # Independently: the pooled outputs of X and of X shuffled, by the multi-head formula.
    pooled = ta.multi_head_attention(x, heads, omega_c).output.mean(axis=0)
    pooled_shuffled = ta.multi_head_attention(x[permutation], heads, omega_c).output.mean(axis=0)
    assert check.pooled_difference == float(np.abs(pooled_shuffled - pooled).max())
    assert check.pooled_difference < 1e-12 and check.max_abs_difference < 1e-12
    assert not np.allclose(check.shuffled, check.original)  # the outputs themselves moved
    with_positions = eq.toy_check(config, permutation, positions=True)
    assert with_positions.pooled_difference > 1e-3  # positions by slot: the pooled output changes too
    page = (ROOT / "txviz" / "selfattention" / "views" / "toy.py").read_text()
    assert "check.pooled_difference" in page and "permutation invariant" in page


def test_gshard_is_beside_switch():
    assert "GShard (Lepikhin et al. 2020)" in moe.GSHARD and "top two experts" in moe.GSHARD
    assert "Switch keeps the top one" in moe.GSHARD
    assert "st.caption(moe.GSHARD)" in (ROOT / "txviz" / "block" / "views" / "textbook.py").read_text()


def test_attention_as_explanation_cites_serrano_smith_and_brunner():
    page = " ".join((ROOT / "txviz" / "softhard" / "views.py").read_text().split())
    assert "Serrano and Smith (2019, *Is Attention Interpretable?*" in page
    assert "Brunner et al. (2019, *On Identifiability in Transformers*" in page
    assert "not identifiable" in page


def test_the_windowed_gru_says_why_it_looks_local():
    page = " ".join((ROOT / "txviz" / "why" / "views" / "path_length.py").read_text().split())
    assert "Why the RNN looks local: its depth is its sequential steps" in page
    assert "a GRU over the whole sequence reads every earlier input" in page
