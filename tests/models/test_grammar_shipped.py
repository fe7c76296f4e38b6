"""The shipped grammar model gives the held-out numbers its runs.json states, recomputed here from the
weights and from a fresh seeded split; its parses are checked against the grammar's own trees."""

import pytest

from txviz.grammar import language as lang
from txviz.grammar import model as grammar_model
from txviz.grammar import results
from txviz.training.grammar import BASELINE_DRAWS

TOLERANCE = 0.02  # another CPU's rounding moves a few of 200-400 held-out answers at most


@pytest.fixture(scope="module")
def shipped():
    model, runs = grammar_model.load()
    config = grammar_model.GrammarConfig(**runs["config"])
    return model, runs, lang.Split(config.seed, config.held_out).held_out_examples()


def test_the_weights_are_small():
    assert (grammar_model.ASSETS_DIR / "model.safetensors").stat().st_size < 2_000_000


def test_held_out_exact_match_is_recomputed_from_the_weights(shipped):
    model, runs, held = shipped
    for name, examples in held.items():
        outputs = results.greedy(model, [e.source for e in examples])
        stored = runs["heldout"][name]
        assert stored["n"] == len(examples)
        assert results.exact_match(outputs, examples) == pytest.approx(stored["exact"], abs=TOLERANCE), name
        if name.startswith("parse"):
            # independently of the stored targets: the grammar's own reader parses each sentence again
            agree = [
                o == lang.parse(list(e.source[1:])).brackets() for o, e in zip(outputs, examples, strict=True)
            ]
            assert sum(agree) / len(agree) == pytest.approx(stored["exact"], abs=TOLERANCE)
            assert sum(map(lang.balanced, outputs)) / len(outputs) == pytest.approx(
                stored["balanced"], abs=TOLERANCE
            )
        if name == "translate":
            said = [results.pronoun(o) for o in outputs]
            truth = [
                "il" if lang.read_pair(" ".join(e.source[1:])).gender == "m" else "elle" for e in examples
            ]
            share = sum(s == t for s, t in zip(said, truth, strict=True)) / len(truth)
            assert share == pytest.approx(stored["pronoun"], abs=TOLERANCE)


def test_the_model_beats_its_baselines_and_they_are_recounted(shipped):
    _, runs, held = shipped
    counted = lang.Split(runs["config"]["seed"] + 100, 1)
    base = results.baselines([counted.draw(t) for t in lang.TASKS for _ in range(BASELINE_DRAWS)], held)
    assert base == runs["baselines"]
    heldout = runs["heldout"]
    assert heldout["parse"]["exact"] > base["parse"]["exact"] + 0.5
    assert heldout["count"]["exact"] > base["count"]["exact"] + 0.3
    assert heldout["translate"]["pronoun"] > base["translate"]["pronoun"] + 0.3
    assert heldout["translate"]["pronoun"] > base["translate"]["subject's gender pronoun"] + 0.2


def test_the_pronouns_cross_attention_is_recomputed(shipped):
    model, runs, held = shipped
    stored = runs["heldout"]["translate"]["pronoun_attention"]
    again = results.pronoun_attention(model, held["translate"])
    assert again["best_head"]["layer"] == stored["best_head"]["layer"]
    assert again["best_head"]["head"] == stored["best_head"]["head"]
    for what in ("antecedent", "other noun", "adjective"):
        assert again["best_head"][what] == pytest.approx(stored["best_head"][what], abs=1e-3)
        assert again["layer_mean"][what] == pytest.approx(stored["layer_mean"][what], abs=1e-3)
