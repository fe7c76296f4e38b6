"""Sampling filters (transformers' warpers) on hand-made distributions and against written-out rules."""

from __future__ import annotations

import math

import pytest
import torch

from txviz.generation.sampling import (
    SamplingSettings,
    apply_temperature,
    choose,
    choose_greedy,
    greedy_token,
    make_generator,
    top_k_filter,
    top_p_filter,
)


def logits_of(probs: list[float]) -> torch.Tensor:
    return torch.tensor(probs, dtype=torch.float32).log()


def kept(logits: torch.Tensor) -> list[int]:
    return torch.isfinite(logits).nonzero().flatten().tolist()


def test_greedy_picks_highest_logit_and_first_on_tie():
    assert greedy_token(torch.tensor([0.1, 2.0, -1.0, 1.5])) == 1
    assert greedy_token(torch.tensor([3.0, 1.0, 3.0])) == 0


def test_temperature_zero_is_greedy_with_one_hot_after():
    logits = logits_of([0.1, 0.6, 0.3])
    choice = choose(logits, SamplingSettings(temperature=0.0))
    assert choice.token_id == 1
    assert choice.after.tolist() == [0.0, 1.0, 0.0]
    assert torch.allclose(choice.before, torch.tensor([0.1, 0.6, 0.3]), atol=1e-6)


def test_temperature_matches_formula():
    logits = torch.tensor([1.0, 2.0, 4.0])
    t = 2.0
    expected = [math.exp(x / t) for x in (1.0, 2.0, 4.0)]
    expected = [e / sum(expected) for e in expected]
    got = torch.softmax(apply_temperature(logits, t), dim=-1)
    assert got.tolist() == pytest.approx(expected, abs=1e-6)


def test_top_k_keeps_k_most_likely_renormalised():
    logits = logits_of([0.1, 0.4, 0.2, 0.3])
    filtered = top_k_filter(logits, 2)
    assert kept(filtered) == [1, 3]
    assert torch.softmax(filtered, -1).tolist() == pytest.approx([0, 4 / 7, 0, 3 / 7], abs=1e-6)
    assert top_k_filter(logits, 0) is logits  # off
    assert kept(top_k_filter(logits, 10)) == [
        0,
        1,
        2,
        3,
    ]  # k past the vocabulary keeps all


def test_top_p_keeps_smallest_set_reaching_p():
    # binary fractions, so the cumulative sums are exact
    logits = logits_of([0.125, 0.5, 0.125, 0.25])
    assert kept(top_p_filter(logits, 0.75)) == [1, 3]  # 0.5 + 0.25 reaches 0.75 exactly
    assert kept(top_p_filter(logits, 0.5)) == [1]
    assert kept(top_p_filter(logits, 0.01)) == [1]  # the most likely token always stays
    assert top_p_filter(logits, 1.0) is logits  # off


def test_top_p_tie_at_the_edge_keeps_one_of_the_tied():
    logits = logits_of([0.125, 0.5, 0.125, 0.25])
    # 0.76 needs one of the two 0.125 tokens; exactly one is added
    assert len(kept(top_p_filter(logits, 0.76))) == 3
    assert kept(top_p_filter(logits, 0.9)) == [0, 1, 2, 3]


def _random_logits(seed: int, ties: bool) -> torch.Tensor:
    """Random logits over a random vocabulary; with ties, a few levels shared by many tokens."""
    generator = torch.Generator().manual_seed(seed)
    size = int(torch.randint(2, 80, (1,), generator=generator))
    if ties:
        return torch.randint(0, 4, (size,), generator=generator).float()
    return torch.randn(size, generator=generator) * float(1 + 4 * torch.rand(1, generator=generator))


def _top_k_by_hand(logits: torch.Tensor, k: int) -> list[int]:
    """Every token at least as likely as the k-th most likely one."""
    kth = sorted(logits.tolist(), reverse=True)[min(k, len(logits)) - 1]
    return [i for i, x in enumerate(logits.tolist()) if x >= kth]


def _nucleus_by_hand(logits: torch.Tensor, p: float) -> tuple[int, float]:
    """Size of the smallest most-likely set reaching p (float64), and how close its mass before the
    last token came to p (where float32 rounding may tip the size by one)."""
    probs = sorted(torch.softmax(logits.double(), -1).tolist(), reverse=True)
    mass, size = 0.0, 0
    while mass < p and size < len(probs):
        mass, size = mass + probs[size], size + 1
    return size, min(abs(mass - p), abs(mass - probs[size - 1] - p))


@pytest.mark.parametrize("ties", [False, True])
def test_top_k_keeps_every_token_up_to_the_kth_on_random_logits(ties):
    for seed in range(200):
        logits = _random_logits(seed, ties)
        for k in (1, 2, 3, 10, 100):
            assert kept(top_k_filter(logits, k)) == _top_k_by_hand(logits, k), (seed, k)


@pytest.mark.parametrize("ties", [False, True])
def test_top_p_keeps_the_smallest_set_reaching_p_on_random_logits(ties):
    near_edge = 0
    for seed in range(200):
        logits = _random_logits(seed, ties)
        for p in (1e-4, 0.1, 0.3, 0.5, 0.75, 0.9, 0.99, 0.999):
            kept_ids = kept(top_p_filter(logits, p))
            size, closest = _nucleus_by_hand(logits, p)
            if closest < 1e-6:  # the mass lands on p to float32 precision: either size is right
                near_edge += 1
                assert abs(len(kept_ids) - size) <= 1, (seed, p)
                continue
            assert len(kept_ids) == size, (seed, p)
            dropped = [x for i, x in enumerate(logits.tolist()) if i not in kept_ids]
            assert not dropped or min(logits[kept_ids].tolist()) >= max(dropped)  # the most likely ones
    assert near_edge <= 4  # a rounding allowance, not a way around the rule


def test_top_p_edge_cases():
    logits = logits_of([0.125, 0.5, 0.125, 0.25])
    assert kept(top_p_filter(logits, 1e-9)) == [1]
    assert kept(top_p_filter(logits, 0.999999)) == [0, 1, 2, 3]
    after_top_k = top_k_filter(logits, 2)  # a nucleus of what top-k left: masked tokens stay out
    assert kept(top_p_filter(after_top_k, 0.9)) == [1, 3]
    assert kept(top_p_filter(torch.tensor([3.0]), 0.5)) == [0]  # a vocabulary of one
    batch = torch.stack([logits, logits.flip(0)])  # leading dimensions are kept
    assert top_p_filter(batch, 0.75).shape == (2, 4)
    assert kept(top_p_filter(batch, 0.75)[1]) == [0, 2]
    assert torch.equal(top_p_filter(batch, 0.75)[0], top_p_filter(logits, 0.75))


def test_stages_follow_the_filters_in_order():
    logits = logits_of([0.05, 0.5, 0.15, 0.3])
    settings = SamplingSettings(temperature=0.5, top_k=3, top_p=0.9, seed=1)
    choice = choose(logits, settings)
    names = [name for name, _ in choice.stages]
    assert names == ["model", "temperature 0.5", "top-k 3", "top-p 0.9"]
    for _, probs in choice.stages:
        assert float(probs.sum()) == pytest.approx(1.0, abs=1e-6)
    assert choice.stages[2][1][0] == 0.0  # top-k 3 dropped the least likely
    # temperature 0.5 squares the probabilities before renormalising
    squared = torch.tensor([0.05, 0.5, 0.15, 0.3]) ** 2
    assert torch.allclose(choice.stages[1][1], squared / squared.sum(), atol=1e-6)
    assert float(choice.after[choice.token_id]) > 0


def test_samples_only_from_what_the_filters_kept():
    logits = logits_of([0.1, 0.4, 0.2, 0.3])
    settings = SamplingSettings(temperature=1.0, top_k=2, seed=3)
    generator = make_generator(3)
    picked = {choose(logits, settings, generator).token_id for _ in range(200)}
    assert picked == {1, 3}


def test_sampling_frequencies_follow_the_distribution():
    logits = logits_of([0.2, 0.8])
    generator = make_generator(0)
    settings = SamplingSettings(temperature=1.0)
    ones = sum(choose(logits, settings, generator).token_id for _ in range(2000))
    assert ones / 2000 == pytest.approx(0.8, abs=0.03)


def test_fixed_seed_reproduces_a_run_and_another_seed_differs():
    logits = torch.zeros(50)  # uniform: the seed alone decides

    def run(seed: int) -> list[int]:
        generator = make_generator(seed)
        settings = SamplingSettings(temperature=1.0, seed=seed)
        return [choose(logits, settings, generator).token_id for _ in range(20)]

    assert run(7) == run(7)
    assert run(7) != run(8)


@pytest.mark.parametrize(
    "settings, message",
    [
        (SamplingSettings(temperature=-1.0), "Temperature"),
        (SamplingSettings(temperature=100.0), "Temperature"),
        (SamplingSettings(top_k=-2), "Top-k"),
        (SamplingSettings(top_p=0.0), "Top-p"),
        (SamplingSettings(top_p=1.5), "Top-p"),
    ],
)
def test_bad_settings_give_clear_messages(settings, message):
    with pytest.raises(ValueError, match=message):
        settings.validate()


def test_describe():
    assert SamplingSettings().describe() == "greedy"
    assert SamplingSettings(temperature=0.8, top_k=40, top_p=0.95).describe() == (
        "temperature 0.8, top-k 40, top-p 0.95"
    )


def _old_greedy(logits: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor]:
    """choose's greedy branch as it was: softmax of the row, argmax, a one-hot built at once."""
    logits = logits.detach().float().cpu().reshape(-1)
    token = int(logits.argmax(dim=-1))
    one_hot = torch.zeros_like(logits)
    one_hot[token] = 1.0
    return token, torch.softmax(logits, dim=-1), one_hot


@pytest.mark.parametrize("threads", [1, 2])
def test_greedy_rows_chosen_together_equal_each_alone_on_random_logits(threads):
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(8, 49152, generator=generator) * 3
    logits[3, :2] = 50.0  # a tie: the lowest index wins, as alone
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        together = choose_greedy(logits)
        for row, choice in zip(logits, together, strict=True):
            token, probs, one_hot = _old_greedy(row)
            alone = choose(row, SamplingSettings())
            for new in (choice, alone):
                assert new.token_id == token
                assert torch.equal(new.before, probs)
                assert [name for name, _ in new.stages] == ["model", "greedy"]
                assert torch.equal(new.after, one_hot) and new.after.dtype == one_hot.dtype
    finally:
        torch.set_num_threads(before)
    assert together[3].token_id == 0


def test_greedy_rows_chosen_together_pick_argmax_on_ties_nan_and_inf():
    generator = torch.Generator().manual_seed(1)
    for trial in range(20):
        logits = (torch.randn(6, 3000, generator=generator) * 3).round()  # many ties
        logits[1] = 2.0
        logits[2, [7, 90]] = float("nan")
        logits[3] = float("-inf")
        logits[4, trial] = float("inf")
        tokens = [choice.token_id for choice in choose_greedy(logits)]
        assert tokens == [greedy_token(row) for row in logits]
        assert tokens[1:4] == [0, 7, 0]
