"""The shipped date-bart variants give the held-out numbers results.json states, recomputed from their
weights; a few self-critical steps from the shipped start repeat the stored rewards and advantages."""

import pytest

from txviz.seq2seq import dates, variants
from txviz.training import date_variants, seq2seq

TOLERANCE = 0.005  # another CPU's rounding may flip a few of the 1,000 held-out answers


@pytest.fixture(scope="module")
def shipped():
    results = variants.load_results()
    budget = date_variants.Budget(**results["budget"])
    train_pairs, heldout = dates.train_and_heldout(budget.seed)
    return results, budget, train_pairs, heldout


def test_the_weights_are_small():
    sizes = [
        (variants.ASSETS_DIR / f"reads_layer_{layer}.safetensors").stat().st_size for layer in variants.LAYERS
    ]
    assert sum(sizes) < 2_000_000


def test_the_tokenizer_is_the_trainers():
    assert variants.tokenizer().get_vocab() == seq2seq.build_tokenizer().get_vocab()


@pytest.mark.parametrize("layer", variants.LAYERS)
def test_held_out_exact_match_is_recomputed_from_the_weights(shipped, layer):
    results, _, _, heldout = shipped
    assert results["heldout_days"] == len(heldout) == dates.HELDOUT_DATES
    model = variants.load_variant(layer)
    stored = results["variants"][str(layer)]["heldout_exact_match"]
    assert variants.exact_match(model, layer, variants.tokenizer(), heldout) == pytest.approx(
        stored, abs=TOLERANCE
    )
    if layer == results["budget"]["start_layer"]:  # REINFORCE's and continued cross-entropy's start
        assert results["reinforce"]["start"] == stored


def test_reinforce_and_cross_entropy_ran_as_long_from_the_same_start(shipped):
    results, budget, _, _ = shipped
    rl = results["reinforce"]
    assert rl["steps"] == budget.continue_steps
    for key in ("ce", "scst", "scst_low"):
        assert rl[key]["curve"]["0"] == rl["start"]
        assert max(map(int, rl[key]["curve"])) == rl["steps"]
        assert rl[key]["final"] == rl[key]["curve"][str(rl["steps"])]


def test_a_few_self_critical_steps_repeat_the_stored_rewards(shipped):
    results, budget, train_pairs, _ = shipped
    start = variants.load_variant(budget.start_layer)
    _, check = date_variants.continue_training(
        start,
        "scst",
        budget,
        seq2seq.build_tokenizer(),
        train_pairs,
        [],
        budget.check_steps,
        budget.check_batch,
    )
    assert len(check["trace"]) == len(results["check"]) == budget.check_steps
    for got, stored in zip(check["trace"], results["check"], strict=True):
        assert got == stored
        # the advantage is the sampled reward minus the greedy one, row by row
        assert got["advantage"] == [s - g for s, g in zip(got["sampled"], got["greedy"], strict=True)]
