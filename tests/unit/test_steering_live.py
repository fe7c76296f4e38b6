"""Steering in Live Generation: the lone steered run beside the shared engine's unsteered one."""

from __future__ import annotations

import pytest
from test_generation import tiny  # noqa: F401 - the shared tiny Llama fixture

from txviz.core.errors import UserError
from txviz.generation.batching import GenerationEngine
from txviz.generation.loop import GenerationRequest, generate
from txviz.generation.sampling import SamplingSettings
from txviz.interventions import steering

TOWARDS, AWAY = ["the cat sat", "the cat"], ["the dog sat on", "on the log"]


@pytest.fixture
def engine(tiny):  # noqa: F811
    made = GenerationEngine(tiny, max_batch=4)
    yield made
    made.close()


def token_ids(steps) -> list[int]:
    return [s.token_id for s in steps]


@pytest.mark.parametrize("sampling", [SamplingSettings(0.0), SamplingSettings(1.0, 20, 0.9, seed=3)])
def test_strength_zero_makes_the_engines_tokens_and_a_strong_vector_changes_them(tiny, engine, sampling):  # noqa: F811
    request = GenerationRequest("the cat sat", 10, sampling, stop_at_eos=False)
    found = steering.direction(tiny, TOWARDS, AWAY, 1)
    unsteered = token_ids(engine.submit(request, owner="page").steps())  # as the page's main run
    zero = token_ids(generate(tiny, steering.steered_request(request, found, 0.0)))
    assert zero == unsteered and len(zero) == 10
    strong = token_ids(generate(tiny, steering.steered_request(request, found, 50.0)))
    assert strong != unsteered
    assert steering.first_difference(unsteered, strong) is not None


def test_the_steered_request_changes_only_the_interventions(tiny):  # noqa: F811
    request = GenerationRequest("the cat", 7, SamplingSettings(0.7, 5, 0.8, seed=11), chat=False)
    found = steering.direction(tiny, TOWARDS, AWAY, 0)
    steered = steering.steered_request(request, found, -2.5)
    (steer,) = steered.interventions
    assert (steer.layer, steer.strength, steer.vector is found.vector) == (0, -2.5, True)
    assert steered.prompt == request.prompt and steered.sampling == request.sampling
    assert steered.max_new_tokens == request.max_new_tokens and steered.chat == request.chat
    assert request.interventions == ()  # the page's request itself is untouched


def test_the_engine_still_refuses_a_steered_request(tiny, engine):  # noqa: F811
    found = steering.direction(tiny, TOWARDS, AWAY, 0)
    with pytest.raises(ValueError, match="no interventions"):
        engine.submit(steering.steered_request(GenerationRequest("the cat", 3), found, 1.0))


@pytest.mark.parametrize(
    "towards, away, message",
    [([], AWAY, "first set of prompts is empty"), (TOWARDS, [], "second set of prompts is empty")],
)
def test_an_empty_prompt_set_is_refused_before_any_forward(towards, away, message):
    with pytest.raises(UserError, match=message):
        steering.check_sets(towards, away)
    assert steering.prompt_lines("\n  \n") == []  # blank lines count as no prompt


def test_first_difference():
    assert steering.first_difference([1, 2, 3], [1, 2, 3]) is None
    assert steering.first_difference([1, 2, 3], [1, 5, 3]) == 1
    assert steering.first_difference([1, 2, 3], [1, 2]) == 2  # one run ended early
    assert steering.first_difference([], []) is None
