"""Why this token: attributions against their formulas, the step's lens, step scores, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_generation import tiny_tokenizer
from tiny_models import tiny_model

from txviz.core.attention import entropy as shannon_entropy
from txviz.core.candidates import Candidates
from txviz.core.running import run
from txviz.explain.attribution import (
    ExplainError,
    Target,
    attribute_embeddings,
    attribute_step,
    decoder_forward,
)
from txviz.explain.command import explain_generation
from txviz.explain.scores import step_scores
from txviz.explain.step import check_step, rank_correlations, step_context, step_lens
from txviz.generation.loop import GenerationRequest, generate, prepare
from txviz.models import LoadedModel

PROMPT = "the cat sat on the"


@pytest.fixture(scope="module")
def tiny() -> LoadedModel:
    tokenizer = tiny_tokenizer()
    model = tiny_model("llama", len(tokenizer), max_position_embeddings=64, eos_token_id=0)
    return LoadedModel("tiny", "decoder", model, tokenizer, None, "cpu")


def greedy_steps(loaded: LoadedModel, n: int = 4):
    request = GenerationRequest(PROMPT, n, stop_at_eos=False)
    prompt = prepare(loaded, request)
    return prompt, list(generate(loaded, request, prompt))


@pytest.mark.parametrize("method", ["gradient", "ig", "ablation"])
def test_a_linear_toy_gets_its_weights_times_its_inputs(method):
    torch.manual_seed(0)
    weights, inputs = torch.randn(1, 5, 3), torch.randn(1, 5, 3)

    def forward(e: torch.Tensor) -> torch.Tensor:
        return (e * weights).sum(dim=(1, 2))

    got = attribute_embeddings(forward, inputs, method, steps=8, batch=2)
    # Linear from a zero baseline: gradient x input, the path integral and removing a token all agree.
    np.testing.assert_allclose(got, (weights * inputs).sum(-1)[0].numpy(), rtol=1e-4, atol=1e-5)


def test_attribution_is_zero_past_what_each_step_read(tiny):
    arrays = explain_generation(tiny, PROMPT, 4)
    prompt = prepare(tiny, GenerationRequest(PROMPT, 4))
    steps, positions = arrays["attribution"].shape
    assert positions == len(prompt) + steps
    for s in range(steps):
        read = len(prompt) + s
        assert not arrays["attribution"][s, read:].any() and not arrays["attention"][s, read:].any()
        assert np.abs(arrays["attribution"][s, 1:read]).sum() > 0
        np.testing.assert_allclose(arrays["attention"][s, :read].sum(), 1.0, atol=2e-3)  # float16 rows
    assert arrays["lens_rank"].shape == (steps, tiny.n_layers + 1)
    assert (arrays["lens_rank"][:, -1] == 0).all()  # greedy: the chosen token is the top at the end


def test_the_step_attribution_matches_gradient_times_embedding_by_hand(tiny):
    prompt, steps = greedy_steps(tiny, 3)
    context, chosen = step_context(prompt.ids, [s.token_id for s in steps], 2)
    got = attribute_step(tiny, context, Target(chosen), "gradient")
    embeds = tiny.model.get_input_embeddings()(torch.tensor([context])).detach().requires_grad_(True)
    logits = run(tiny.model, outputs=("logits",), grad=True, inputs_embeds=embeds).logits[0, -1]
    torch.log_softmax(logits, -1)[chosen].backward()
    np.testing.assert_allclose(got, (embeds.grad * embeds).sum(-1)[0].detach().numpy(), rtol=1e-4, atol=1e-6)


def test_the_lens_last_row_is_the_steps_own_argmax(tiny):
    prompt, steps = greedy_steps(tiny)
    generated = [s.token_id for s in steps]
    for index, step in enumerate(steps):
        context, chosen = step_context(prompt.ids, generated, index)
        lens = step_lens(tiny, context, chosen)
        assert lens.top_ids[-1] == step.candidates.ids[0] == chosen
        assert lens.rank[-1] == 0
        np.testing.assert_allclose(lens.probability[-1], step.candidates.model_probs[0], rtol=1e-4)
        assert len(lens.rank) == tiny.n_layers + 1


def test_the_lens_follows_a_token_that_was_not_the_top(tiny):
    prompt, steps = greedy_steps(tiny, 1)
    runner_up = steps[0].candidates.ids[1]
    lens = step_lens(tiny, prompt.ids, runner_up)
    assert lens.rank[-1] == 1 and lens.top_ids[-1] == steps[0].token_id
    np.testing.assert_allclose(lens.probability[-1], steps[0].candidates.model_probs[1], rtol=1e-4)


def test_contrastive_attribution_of_a_token_against_itself_is_zero(tiny):
    prompt, steps = greedy_steps(tiny, 1)
    embeds = tiny.model.get_input_embeddings()(torch.tensor([prompt.ids])).detach()
    x = steps[0].token_id
    for method in ("gradient", "ig", "ablation"):
        got = attribute_embeddings(decoder_forward(tiny, Target(x, x)), embeds, method, steps=4)
        assert not got.any(), method


def test_contrastive_attribution_is_the_difference_of_the_two_logits_attributions(tiny):
    prompt, steps = greedy_steps(tiny, 1)
    embeds = tiny.model.get_input_embeddings()(torch.tensor([prompt.ids])).detach()
    x, y = steps[0].candidates.ids[:2]

    def logit(token):
        return lambda e: run(tiny.model, outputs=("logits",), grad=True, inputs_embeds=e).logits[:, -1, token]

    both = attribute_embeddings(decoder_forward(tiny, Target(x, y)), embeds, "gradient")
    apart = attribute_embeddings(logit(x), embeds, "gradient") - attribute_embeddings(
        logit(y), embeds, "gradient"
    )
    np.testing.assert_allclose(both, apart, rtol=1e-4, atol=1e-6)


def test_step_scores_are_their_formulas_on_a_known_distribution():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    entropy = float(-(p * np.log(p)).sum())
    first = Candidates((7, 8, 9, 10), ("a", "b", "c", "d"), p[None].astype(np.float32), chosen=7)
    second = Candidates((7, 8, 9, 10), ("a", "b", "c", "d"), p[None].astype(np.float32), chosen=9)
    scores = step_scores([first, second], [entropy, entropy])
    np.testing.assert_allclose(scores.probability, [0.5, 0.15], rtol=1e-6)
    np.testing.assert_allclose(scores.margin, [0.5 - 0.3, 0.15 - 0.5], rtol=1e-6)
    np.testing.assert_allclose(scores.surprisal, [np.log(2), -np.log(0.15)], rtol=1e-6)
    np.testing.assert_allclose(scores.entropy, [entropy, entropy])


def test_each_generation_step_keeps_the_entropy_of_its_whole_distribution(tiny):
    prompt, steps = greedy_steps(tiny, 2)
    ids = torch.tensor([list(prompt.ids) + [steps[0].token_id]])
    logits = run(tiny.model, outputs=("logits",), input_ids=ids).logits[0, -1]
    expected = float(shannon_entropy(torch.softmax(logits.float(), -1)))
    assert steps[1].entropy == pytest.approx(expected, rel=1e-4)


def test_rank_correlations_of_identical_and_reversed_measures():
    up = np.arange(1.0, 7.0)
    rho = rank_correlations({"a": up, "b": 2 * up, "c": up[::-1].copy()})
    np.testing.assert_allclose(rho, [[1, 1, -1], [1, 1, -1], [-1, -1, 1]], atol=1e-12)


def test_bad_input_gets_a_clear_message(tiny):
    with pytest.raises(ExplainError, match="beyond the generation: choose a step from 0 to 4"):
        check_step(5, 5)
    with pytest.raises(ExplainError, match="stopped before making any token"):
        step_context((1, 2), [], 0)
    prompt, steps = greedy_steps(tiny, 1)
    x = steps[0].token_id
    with pytest.raises(ExplainError, match="alternative is the chosen token itself"):
        attribute_step(tiny, prompt.ids, Target(x, x), "gradient")


def test_step_scores_strip_names_each_row_readably_and_within_its_row():
    """The "How sure" figure: each score's name at 12 px or more, and no title longer than its row."""
    from txviz.explain.figures import step_scores_strip
    from txviz.explain.scores import SCORES, StepScores
    from txviz.figures.axes import TICK_FONT, label_width

    figure = step_scores_strip(
        StepScores(*np.random.default_rng(0).random((4, 6))), list("abcdef"), current=2
    )
    layout = figure.to_dict()["layout"]
    plot_height = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"] - 60  # less the x axis
    named = {}
    for axis in (k for k in layout if k.startswith("yaxis")):
        title = layout[axis].get("title", {})
        if title.get("text"):
            size = title.get("font", {}).get("size", 14)
            low, high = layout[axis]["domain"]
            assert size >= TICK_FONT, (axis, size)
            assert label_width(title["text"], size) <= (high - low) * plot_height, title["text"]
            named[title["text"]] = size
    for note in layout.get("annotations", []):
        named[note["text"]] = note.get("font", {}).get("size", 16)
    for name in SCORES.values():
        assert named.get(name, 0) >= TICK_FONT, name
