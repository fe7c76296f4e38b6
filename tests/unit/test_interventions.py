"""The interventions topic on tiny models: metrics, ablations, sweeps, patching, attribution, steering."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from tiny_models import byte_bpe, tiny_model
from transformers import PreTrainedTokenizerFast

from txviz.core.capture import CaptureSettings
from txviz.core.edits import Ablate, Knockout, Patch, Steer
from txviz.core.errors import UserError, WrongModelKind
from txviz.core.running import run
from txviz.interventions import ablation, metrics, patching, runs, steering
from txviz.interventions.ablation import Component
from txviz.models import LoadedModel

CLEAN, CORRUPT = "the cat sat on the", "the dog sat on the"


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    return byte_bpe(["the cat sat on the mat and the dog sat on the log"] * 5, 300, eos_token="<eos>")


@pytest.fixture(scope="module")
def tiny() -> LoadedModel:
    tokenizer = tiny_tokenizer()
    model = tiny_model("llama", len(tokenizer), max_position_embeddings=64, eos_token_id=0)
    return LoadedModel("tiny", "decoder", model, tokenizer, None, "cpu")


@pytest.fixture(scope="module")
def metric(tiny) -> metrics.Metric:
    return metrics.make_metric(tiny, "logit_difference", " cat", " dog")


def last_logits(loaded, text):
    ids = torch.tensor([loaded.tokenizer(text)["input_ids"]])
    return run(loaded.model, outputs=("logits",), input_ids=ids).logits[:, -1]


def test_metrics_follow_their_formulas(tiny):
    logits = last_logits(tiny, CLEAN)
    cat, dog = (tiny.tokenizer(t, add_special_tokens=False)["input_ids"][0] for t in (" cat", " dog"))
    log_p = torch.log_softmax(logits, -1)[0]
    expected = {
        "logit": logits[0, cat],
        "logit_difference": logits[0, cat] - logits[0, dog],
        "log_probability": log_p[cat],
        "probability": log_p[cat].exp(),
    }
    for kind, value in expected.items():
        got = metrics.make_metric(tiny, kind, " cat", " dog")(logits)[0]
        torch.testing.assert_close(got, value)
    assert metrics.recovered(3.0, 5.0, 1.0) == 0.5


def test_an_answer_of_several_tokens_uses_its_first_with_a_notice(tiny):
    metric = metrics.make_metric(tiny, "probability", " cat sat")
    assert metric.answer == tiny.tokenizer(" cat", add_special_tokens=False)["input_ids"][0]
    assert "first token" in metric.notice and "2 tokens" in metric.notice


def test_bad_metrics_and_models_are_refused(tiny):
    with pytest.raises(UserError, match="empty"):
        metrics.make_metric(tiny, "logit", "")
    assert metrics.make_metric(tiny, "logit", "\n").answer == tiny.tokenizer("\n")["input_ids"][0]
    with pytest.raises(UserError, match="both start with"):
        metrics.make_metric(tiny, "logit_difference", " cat", " cat sat")
    bert = LoadedModel("bert-tiny", "encoder", tiny_model("bert", 300), tiny.tokenizer, None, "cpu")
    with pytest.raises(WrongModelKind, match="no next-token head"):
        metrics.make_metric(bert, "probability", " cat")
    with pytest.raises(UserError, match="nothing to recover"):
        metrics.recovered(1.0, 2.0, 2.0)


def test_ablating_a_head_equals_zeroing_its_slice_of_the_output_projection_input(tiny, metric):
    result = ablation.ablate(tiny, CLEAN, metric, [Component("head_out", 1, 2)])
    o_proj = tiny.model.model.layers[1].self_attn.o_proj
    width = o_proj.in_features // tiny.n_heads

    def zero_head(module, args):
        x = args[0].clone()
        x[..., 2 * width : 3 * width] = 0
        return (x,)

    handle = o_proj.register_forward_pre_hook(
        zero_head
    )  # a test's own model: the hook is the hand computation
    try:
        by_hand = metric(last_logits(tiny, CLEAN))[0]
    finally:
        handle.remove()
    assert result.after == pytest.approx(float(by_hand), abs=1e-5)
    assert result.before == pytest.approx(float(metric(last_logits(tiny, CLEAN))[0]), abs=1e-5)
    assert abs(result.change) > 1e-6


@pytest.mark.parametrize("mode", ["zero", "mean", "resample"])
def test_a_batched_sweep_equals_each_ablation_alone(tiny, metric, mode):
    reference = "the dog sat on the mat and the cat"
    swept = ablation.sweep(tiny, CLEAN, metric, mode, reference, batch_size=5)
    alone = [
        ablation.ablate(tiny, CLEAN, metric, [c], mode, reference).change
        for c in ablation.every_component(tiny)
    ]
    n = tiny.n_layers * tiny.n_heads
    np.testing.assert_allclose(swept.heads.ravel(), alone[:n], atol=1e-5)
    np.testing.assert_allclose(swept.ffn, alone[n:], atol=1e-5)
    assert np.abs(swept.heads).max() > 1e-5


def test_mean_ablation_sets_the_head_to_its_mean_over_the_reference(tiny, metric):
    reference = "the dog sat on the mat"
    ref = ablation.reference_run(tiny, "mean", reference)
    mean = ref.head_output(0, 1)[0].mean(0)
    value = ablation.replacement(Component("head_out", 0, 1), "mean", ref, 5)
    torch.testing.assert_close(value, mean)
    with pytest.raises(UserError, match="at least"):
        ablation.replacement(Component("head_out", 0, 1), "resample", ref, 50)


def test_an_edge_knockout_changes_attention_of_its_layer_only(tiny, metric):
    result = ablation.ablate(tiny, CLEAN, metric, edges=[ablation.Edge(4, 1, (1,))], view=(1, 0))
    assert result.attention_after[4, 1] == 0 and result.attention_before[4, 1] > 0
    np.testing.assert_allclose(result.attention_after.sum(-1), 1, atol=1e-5)
    with pytest.raises(UserError, match="earlier one"):
        ablation.ablate(tiny, CLEAN, metric, edges=[ablation.Edge(1, 4, (1,))])


def test_patching_clean_into_clean_changes_nothing(tiny, metric):
    ids = tiny.tokenizer(CLEAN)["input_ids"]
    acts = patching.activations(tiny, ids, ids, metric)
    jobs = patching.patch_jobs(acts, tiny.n_layers, tiny.n_heads, len(ids))
    every = jobs["residual"] + jobs["heads"] + jobs["ffn"]
    values = ablation.batched_metrics(tiny, ids, metric, every, 7)
    np.testing.assert_allclose(values, acts.clean_value, atol=1e-5)


def test_patching_grids_recover_the_clean_run_where_they_must(tiny, metric):
    result = patching.patch(tiny, CLEAN, CORRUPT, metric, batch_size=6)
    assert result.residual.shape == (tiny.n_layers + 1, 5) and result.heads.shape == (2, 4)
    # the whole stream at the last position after the last block is the clean one: recovered 1
    assert result.residual[-1, -1] == pytest.approx(1.0, abs=1e-4)
    # the tokens before the changed word are the same in both: patching them changes nothing
    np.testing.assert_allclose(result.residual[:, 0], 0.0, atol=1e-4)
    # the embeddings at the changed word alone carry the whole difference
    assert result.residual[0, 1] == pytest.approx(1.0, abs=1e-4)
    clean = metric(last_logits(tiny, CLEAN))[0]
    assert result.clean_value == pytest.approx(float(clean), abs=1e-5)


@pytest.mark.parametrize("layer", [0, 1])
def test_patching_the_whole_stream_after_a_layer_gives_the_clean_metric(tiny, metric, layer):
    ids = tiny.tokenizer(CORRUPT)["input_ids"]
    acts = patching.activations(tiny, tiny.tokenizer(CLEAN)["input_ids"], ids, metric)
    value = torch.from_numpy(acts.streams[0][layer + 1])
    got = ablation.batched_metrics(tiny, ids, metric, [[Patch("resid", layer, value=value)]], 1)
    assert metrics.recovered(got[0], acts.clean_value, acts.corrupt_value) == pytest.approx(1.0, abs=1e-5)


def test_a_patch_at_one_position_leaves_earlier_positions_unchanged(tiny):
    ids = torch.tensor([tiny.tokenizer(CORRUPT)["input_ids"]])
    patched = Patch("resid", 0, positions=[3], value=torch.randn(tiny.config.hidden_size))
    plain = run(tiny.model, outputs=("logits",), input_ids=ids).logits
    changed = run(tiny.model, CaptureSettings(interventions=(patched,)), ("logits",), input_ids=ids).logits
    torch.testing.assert_close(changed[:, :3], plain[:, :3])
    assert not torch.allclose(changed[:, 3:], plain[:, 3:])


def linear_toy() -> LoadedModel:
    """A GPT-2 whose output is linear in the last block's heads and stream: no final norm, no last MLP."""
    tokenizer = tiny_tokenizer()
    model = tiny_model("gpt2", len(tokenizer), n_positions=64)
    model.transformer.ln_f = torch.nn.Identity()
    with torch.no_grad():  # the last MLP adds nothing
        model.transformer.h[-1].mlp.c_proj.weight.zero_()
        model.transformer.h[-1].mlp.c_proj.bias.zero_()
    return LoadedModel("linear-toy", "decoder", model, tokenizer, None, "cpu")


def test_attribution_patching_is_exact_where_the_model_is_linear():
    toy = linear_toy()
    metric = metrics.make_metric(toy, "logit_difference", " cat", " dog")
    result = patching.patch(toy, CLEAN, CORRUPT, metric)
    np.testing.assert_allclose(result.estimate.heads[-1], result.heads[-1], atol=1e-4)
    np.testing.assert_allclose(result.estimate.residual[-1], result.residual[-1], atol=1e-4)
    assert not np.allclose(result.estimate.heads[0], result.heads[0], atol=1e-4)  # nonlinear before
    assert np.isfinite(result.heads_rho) and -1 <= result.heads_rho <= 1


def test_steering_every_head_at_once_equals_steering_each_head(tiny):
    ids = torch.tensor([tiny.tokenizer(CLEAN)["input_ids"]])
    vector = torch.randn(ids.shape[1], tiny.n_heads, tiny.config.hidden_size // tiny.n_heads)
    logits = lambda edits: runs.forward(tiny, ids, edits).logits  # noqa: E731
    each = [Steer("head_out", 1, h, vector=vector[:, h]) for h in range(tiny.n_heads)]
    torch.testing.assert_close(logits([Steer("head_out", 1, vector=vector)]), logits(each))
    assert not torch.allclose(logits([]), logits(each))


def test_the_two_row_pass_gives_each_run_alone_and_the_corrupted_gradients(tiny, metric):
    clean, corrupt = (tiny.tokenizer(t)["input_ids"] for t in (CLEAN, CORRUPT))
    acts = patching.activations(tiny, clean, corrupt, metric)
    assert acts.clean_value == pytest.approx(float(metric(last_logits(tiny, CLEAN))[0]), abs=1e-5)
    assert acts.corrupt_value == pytest.approx(float(metric(last_logits(tiny, CORRUPT))[0]), abs=1e-5)
    # The corrupted run alone, one zero vector per head: what the two-row pass must reproduce.
    width = tiny.config.hidden_size // tiny.n_heads
    vectors = [torch.zeros(len(corrupt), width, requires_grad=True) for _ in range(tiny.n_heads)]
    steers = [Steer("head_out", 1, h, vector=v) for h, v in enumerate(vectors)]
    alone = runs.forward(tiny, torch.tensor([corrupt]), steers, frozenset({"head_out"}), grad=True)
    grads = torch.autograd.grad(metric(alone.logits[:, -1])[0], vectors)
    np.testing.assert_allclose(acts.head_grad[1], torch.stack(grads).numpy(), atol=1e-5)
    np.testing.assert_allclose(acts.heads[1][1], alone.head_output(1)[0].detach().numpy(), atol=1e-5)
    assert np.abs(acts.head_grad[1]).max() > 1e-4


def test_clean_and_corrupted_must_have_the_same_length(tiny, metric):
    with pytest.raises(UserError, match="same number of tokens"):
        patching.patch(tiny, CLEAN, "the dog sat on the mat", metric)
    with pytest.raises(UserError, match="empty"):
        patching.patch(tiny, "", CORRUPT, metric)
    with pytest.raises(UserError, match="are the same"):
        patching.patch(tiny, CLEAN, CLEAN, metric)


def test_a_prompt_is_refused_when_empty_or_too_long_and_cut_only_on_request(tiny):
    long = "the cat sat on the mat " * 20
    full = tiny.tokenizer(long)["input_ids"]
    limit = tiny.n_ctx  # 64 here, under runs.MAX_TOKENS
    assert len(full) > limit
    for bad in ("", "  \n"):
        with pytest.raises(runs.PromptError, match="clean prompt is empty"):
            runs.prompt_ids(tiny, bad, "clean prompt")
        with pytest.raises(runs.PromptError, match="empty"):
            runs.cut_prompt(tiny, bad)
    with pytest.raises(
        runs.PromptError, match=f"has {len(full)} tokens; interventions read at most {limit} "
    ):
        runs.prompt_ids(tiny, long)
    assert runs.cut_prompt(tiny, CLEAN) == (CLEAN, "")
    cut, notice = runs.cut_prompt(tiny, long, "prompt to continue")
    assert tiny.tokenizer(cut)["input_ids"] == full[:limit]
    assert long.startswith(cut)
    assert f"has {len(full)} tokens; only its first {limit} are kept" in notice


def test_steering_with_strength_zero_is_the_plain_run_and_the_direction_is_a_mean_difference(tiny):
    positive, negative = ["the cat sat", "the cat"], ["the dog sat on"]
    found = steering.direction(tiny, positive, negative, 0)
    by_hand = torch.stack([steering.last_stream(tiny, t, 0) for t in positive]).mean(
        0
    ) - steering.last_stream(tiny, negative[0], 0)
    torch.testing.assert_close(found.vector, by_hand)
    plain, zero = steering.steered_pair(tiny, "the cat", found, 0.0, 6)
    assert zero == plain
    _, strong = steering.steered_pair(tiny, "the cat", found, 50.0, 6)
    assert strong != plain
    with pytest.raises(UserError, match="empty"):
        steering.direction(tiny, [], negative, 0)


def test_concurrent_sessions_never_see_each_others_interventions(tiny, metric):
    targets = [Component("head_out", 0, 1), Component("head_out", 1, 3), Component("ffn", 0)]
    expected = [ablation.ablate(tiny, CLEAN, metric, [c]).after for c in targets]
    got: dict[int, list[float]] = {i: [] for i in range(len(targets))}

    def session(i: int) -> None:
        for _ in range(15):
            got[i].append(ablation.ablate(tiny, CLEAN, metric, [targets[i]]).after)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(len(targets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, value in enumerate(expected):
        np.testing.assert_allclose(got[i], value, atol=1e-6)
    assert len(set(np.round(expected, 6))) == len(targets)


def test_rank_correlation_ignores_float_noise_in_cells_that_are_zero():
    exact = np.array([0.0, 1e-7, -1e-7, 0.0, 0.2, 0.5, 0.9])
    estimate = np.array([-1e-7, 0.0, 1e-7, 2e-7, 0.1, 0.6, 0.8])
    assert patching.rank_correlation(exact, estimate) == pytest.approx(1.0)


def _alone(tiny, ids, metric, edits) -> float:
    """The metric of ``edits`` run alone, in a batch of one."""
    result = runs.forward(tiny, runs.repeated(ids, 1), edits)
    return float(metric(result.logits[:, -1])[0])


def test_a_steer_in_a_batched_row_stays_a_steer(tiny, metric):
    ids = tiny.tokenizer(CLEAN)["input_ids"]
    steer = Steer("resid", 0, vector=torch.randn(tiny.model.config.hidden_size), strength=3.0)
    assert isinstance(ablation._in_row(steer, 2), Steer) and ablation._in_row(steer, 2).rows == (2,)
    jobs = [[], [steer], [Ablate("resid", 0)]]
    got = ablation.batched_metrics(tiny, ids, metric, jobs, 3)
    want = [_alone(tiny, ids, metric, job) for job in jobs]
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert abs(got[1] - got[2]) > 1e-4  # a steer is not a zero ablation


def test_a_knockout_in_a_batched_row_cuts_that_row_only(tiny, metric):
    ids = tiny.tokenizer(CLEAN)["input_ids"]
    cut = Knockout(edges=[(len(ids) - 1, 0)], layers=[0, 1])
    jobs = [[], [cut], [Knockout(edges=[(len(ids) - 1, 1)], layers=[1], heads=[0])]]
    got = ablation.batched_metrics(tiny, ids, metric, jobs, 3)
    want = [_alone(tiny, ids, metric, job) for job in jobs]
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert abs(got[1] - got[0]) > 1e-6


def test_steer_tells_its_progress_with_the_time_left_and_matches_its_parts(tiny):
    positive, negative = ["the cat sat", "the cat"], ["the dog sat on"]
    told = []
    found, (plain, steered) = steering.steer(
        tiny, positive, negative, 0, "the cat", 50.0, 6, progress=lambda f, text: told.append((f, text))
    )
    alone = steering.direction(tiny, positive, negative, 0)
    torch.testing.assert_close(found.vector, alone.vector)
    assert (plain, steered) == steering.steered_pair(tiny, "the cat", alone, 50.0, 6)
    fractions = [f for f, _ in told]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] <= 1.0
    assert "estimating the time left" in told[0][1]
    assert all(text.endswith(" left") and " of 15" in text for _, text in told[1:])
    assert len(told) >= 1 + len(positive) + len(negative) + 1  # the passes, then at least one token


def test_scripts_exported_with_the_old_component_kinds_still_run(tiny, metric):
    assert Component("head", 1, 2) == Component("head_out", 1, 2) and Component("mlp", 0).kind == "ffn"
    old = ablation.ablate(tiny, CLEAN, metric, [Component("head", 1, 2), Component("mlp", 0)])
    new = ablation.ablate(tiny, CLEAN, metric, [Component("head_out", 1, 2), Component("ffn", 0)])
    assert old.after == new.after
    swept = ablation.SweepResult((), metric, "zero", 0.0, np.zeros((1, 1)), np.ones(1), 0.0)
    assert swept.mlp is swept.ffn  # an exported sweep script prints result.mlp
    with pytest.raises(UserError, match="head_out"):
        Component("neuron", 0)
