"""The generation loop: same tokens as model.generate, true attention rows, clean stops."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from conftest import plotly_array
from tiny_models import byte_bpe, tiny_model
from transformers import (
    PreTrainedTokenizerFast,
)

from txviz.core import capture as capture_module
from txviz.core.capture import CaptureSettings, capture
from txviz.core.errors import WrongModelKind
from txviz.generation.loop import (
    GenerationError,
    GenerationRequest,
    attention_bytes,
    generate,
    kv_cache_size,
    prepare,
    sequence_attention,
)
from txviz.generation.sampling import SamplingSettings
from txviz.models import LoadedModel

CORPUS = ["the cat sat on the mat and the dog sat on the log"] * 5


def prompt_ids(loaded: LoadedModel, text: str) -> torch.Tensor:
    return torch.tensor([loaded.tokenizer(text)["input_ids"]])


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    return byte_bpe(CORPUS, 300, eos_token="<eos>")


@pytest.fixture(scope="module")
def tiny() -> LoadedModel:
    """A random 2-layer Llama with grouped KV heads: real transformers code, milliseconds a step."""
    tokenizer = tiny_tokenizer()
    model = tiny_model("llama", len(tokenizer), max_position_embeddings=64, eos_token_id=0)
    return LoadedModel("tiny", "decoder", model, tokenizer, None, "cpu")


def greedy_reference(loaded: LoadedModel, text: str, n: int) -> list[int]:
    ids = prompt_ids(loaded, text)
    out = loaded.model.generate(ids, do_sample=False, max_new_tokens=n, min_new_tokens=n)
    return out[0, ids.shape[1] :].tolist()


def test_greedy_matches_model_generate(tiny):
    steps = list(generate(tiny, GenerationRequest("the cat sat", max_new_tokens=12)))
    assert [s.token_id for s in steps] == greedy_reference(tiny, "the cat sat", 12)
    assert [s.position for s in steps] == list(range(3, 15))  # "the cat sat" is 3 tokens
    assert steps[-1].text == tiny.tokenizer.decode([s.token_id for s in steps])


def test_attention_rows_equal_a_full_forward(tiny):
    steps = list(generate(tiny, GenerationRequest("the dog sat on", max_new_tokens=6)))
    prompt = prompt_ids(tiny, "the dog sat on")
    n_prompt = prompt.shape[1]
    full_ids = torch.cat([prompt, torch.tensor([[s.token_id for s in steps]])], dim=1)
    with (
        torch.no_grad(),
        capture(tiny.model, CaptureSettings(record={"weights"})) as rec,
    ):
        tiny.model(input_ids=full_ids)
    full = rec.stack("weights")  # (L, H, T, T)
    for i, step in enumerate(steps):
        query = n_prompt + i - 1
        assert step.query_position == query
        assert step.attention.shape == (2, 4, query + 1)
        np.testing.assert_allclose(step.attention, full[:, :, query, : query + 1], atol=1e-3)
        np.testing.assert_allclose(step.attention.astype(np.float32).sum(-1), 1.0, atol=3e-3)


def test_candidates_carry_the_models_distribution(tiny):
    step = next(generate(tiny, GenerationRequest("the cat", max_new_tokens=1)))
    with torch.no_grad():
        logits = tiny.model(input_ids=prompt_ids(tiny, "the cat")).logits[0, -1]
    probs = torch.softmax(logits, -1)
    expected = probs.topk(10)
    assert step.candidates.ids == tuple(expected.indices.tolist())
    np.testing.assert_allclose(step.candidates.probs[0], expected.values.numpy(), atol=1e-5)
    assert step.candidates.stages == ("model", "greedy")
    assert step.candidates.probs[1].tolist() == [1.0] + [0.0] * 9  # greedy takes the top one
    assert step.chosen_rank == 0


def test_filters_shape_the_candidates_and_a_seed_repeats_the_run(tiny):
    sampling = SamplingSettings(temperature=1.5, top_k=5, top_p=0.9, seed=11)
    request = GenerationRequest("the mat", max_new_tokens=10, sampling=sampling)
    first = list(generate(tiny, request))
    again = list(generate(tiny, request))
    assert [s.token_id for s in first] == [s.token_id for s in again]
    other = list(generate(tiny, GenerationRequest("the mat", 10, SamplingSettings(1.5, 5, 0.9, 12))))
    assert [s.token_id for s in first] != [s.token_id for s in other]
    for step in first:
        assert step.candidates.stages == ("model", "temperature 1.5", "top-k 5", "top-p 0.9")
        after = step.candidates.probs[-1]
        assert (after[5:] == 0).all()  # top-k 5 left nothing past the fifth candidate
        assert after[step.chosen_rank] > 0  # a token the filters removed is never chosen


def test_kv_cache_grows_one_token_a_step_with_exact_bytes(tiny):
    steps = list(generate(tiny, GenerationRequest("the cat sat", max_new_tokens=4)))
    # 2 (keys and values) x 2 KV heads x 8 dims x tokens x 4 bytes, per layer
    for step in steps:
        assert step.kv_tokens == (step.position,) * 2
        assert step.kv_bytes == (2 * 2 * 8 * step.position * 4,) * 2
    assert kv_cache_size(object()) == ((), ())


def test_stopping_keeps_what_was_made_and_leaves_no_capture_open(tiny):
    run = generate(tiny, GenerationRequest("the cat sat", max_new_tokens=20))
    kept = [next(run) for _ in range(3)]
    assert capture_module._active.get() is None  # no capture block spans a yield
    run.close()
    assert [s.index for s in kept] == [0, 1, 2]
    assert kept[-1].elapsed_s >= kept[0].elapsed_s > 0


def test_end_of_sequence_stops_the_run(tiny):
    first = next(generate(tiny, GenerationRequest("the cat sat", max_new_tokens=1))).token_id
    config = tiny.model.generation_config
    saved = config.eos_token_id
    config.eos_token_id = first  # this test's own expectation; restored below
    try:
        steps = list(generate(tiny, GenerationRequest("the cat sat", max_new_tokens=5)))
        unbounded = list(
            generate(
                tiny,
                GenerationRequest("the cat sat", max_new_tokens=5, stop_at_eos=False),
            )
        )
    finally:
        config.eos_token_id = saved
    assert len(steps) == 1 and steps[0].finished
    assert len(unbounded) == 5


def test_recording_off_keeps_tokens_and_no_rows(tiny):
    request = GenerationRequest("the cat sat", max_new_tokens=5, record_attention=False)
    steps = list(generate(tiny, request))
    assert [s.token_id for s in steps] == greedy_reference(tiny, "the cat sat", 5)
    assert all(s.attention is None for s in steps)


def test_two_sessions_at_once_keep_their_own_tokens_and_attention(tiny):
    requests = {
        "a": GenerationRequest("the cat sat", 15, SamplingSettings(temperature=1.0, seed=1)),
        "b": GenerationRequest("on the log and", 15, SamplingSettings(temperature=1.0, seed=2)),
    }
    alone = {k: list(generate(tiny, r)) for k, r in requests.items()}
    together: dict[str, list] = {}
    barrier = threading.Barrier(2)

    def session(key: str) -> None:
        barrier.wait()
        together[key] = list(generate(tiny, requests[key]))

    threads = [threading.Thread(target=session, args=(k,)) for k in requests]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key in requests:
        assert [s.token_id for s in together[key]] == [s.token_id for s in alone[key]]
        for mine, reference in zip(together[key], alone[key], strict=True):
            np.testing.assert_array_equal(mine.attention, reference.attention)
    assert together["a"][0].attention.shape[-1] != together["b"][0].attention.shape[-1]


def test_sequence_attention_stacks_rows_causally(tiny):
    steps = list(generate(tiny, GenerationRequest("the cat sat", max_new_tokens=4)))
    matrix = sequence_attention(steps, layer=1, head=2)
    assert matrix.shape == (4, 6)  # queries at positions 2..5, keys 0..5
    for i, step in enumerate(steps):
        np.testing.assert_array_equal(matrix[i, : 3 + i], step.attention[1, 2])
        assert (matrix[i, 3 + i :] == 0).all()
    assert sequence_attention([], 0, 0).shape == (0, 0)


def test_attention_bytes_formula():
    newest, total = attention_bytes(n_layers=30, n_heads=9, n_prompt=10, n_new=1024)
    assert newest == 30 * 9 * 1033 * 2
    assert total == 30 * 9 * sum(range(10, 1034)) * 2


@pytest.mark.parametrize(
    "request_, message",
    [
        (GenerationRequest(""), "prompt is empty"),
        (GenerationRequest("   \n"), "prompt is empty"),
        (GenerationRequest("the cat", max_new_tokens=0), "at least 1"),
        (GenerationRequest("the cat", max_new_tokens=10**6), "at most 512"),
        (GenerationRequest("the cat " * 40), "reads at most 64"),
        (
            GenerationRequest("the cat " * 20, max_new_tokens=40),
            "41 tokens.*at most 23 new tokens",
        ),
        (
            GenerationRequest("the cat", sampling=SamplingSettings(temperature=-1)),
            "Temperature",
        ),
        (GenerationRequest("the cat", chat=True), "no chat template"),
    ],
)
def test_bad_requests_give_clear_messages(tiny, request_, message):
    with pytest.raises(GenerationError, match=message):
        prepare(tiny, request_)


def test_temperature_zero_is_greedy(tiny):
    request = GenerationRequest("the cat", 6, SamplingSettings(temperature=0.0, top_k=3, seed=5))
    assert [s.token_id for s in generate(tiny, request)] == greedy_reference(tiny, "the cat", 6)


def test_encoder_only_model_is_refused_with_a_message(tiny):
    bert = tiny_model("bert", len(tiny.tokenizer))
    encoder = LoadedModel("bert-tiny", "encoder", bert, tiny.tokenizer, None, "cpu")
    with pytest.raises(WrongModelKind, match="encoder.*no next-token head"):
        prepare(encoder, GenerationRequest("the cat"))


def test_candidate_bars_show_each_stage_and_mark_the_chosen(tiny):
    from txviz.generation.figures import candidate_bars

    sampling = SamplingSettings(temperature=0.7, top_k=4, seed=3)
    step = next(generate(tiny, GenerationRequest("the cat", 1, sampling)))
    data = candidate_bars(step).to_dict()["data"]
    assert [trace["name"] for trace in data] == ["model", "temperature 0.7", "top-k 4"]
    for trace, probs in zip(data, step.candidates.probs, strict=True):
        np.testing.assert_allclose(plotly_array(trace["x"]), probs)
        widths = trace["marker"]["line"]["width"]
        assert widths[step.chosen_rank] > 0 and sum(widths) == widths[step.chosen_rank]
    ticks = candidate_bars(step).to_dict()["layout"]["yaxis"]["ticktext"]
    assert ticks[step.chosen_rank].startswith("▶")


def test_newest_attention_figures_carry_the_rows(tiny):
    from txviz.generation.figures import newest_attention_all_heads, newest_attention_head
    from txviz.generation.loop import sequence_tokens

    prompt = prepare(tiny, GenerationRequest("the cat sat"))
    steps = list(generate(tiny, GenerationRequest("the cat sat", 3), prompt))
    tokens = sequence_tokens(prompt, steps)
    step = steps[2]
    bar = newest_attention_head(step, tokens, layer=1, head=3).to_dict()
    np.testing.assert_allclose(plotly_array(bar["data"][0]["y"]), step.attention[1, 3].astype(np.float32))
    assert bar["layout"]["xaxis"]["ticktext"] == list(tokens[:5])
    heat = newest_attention_all_heads(step, tokens, layer=0).to_dict()
    np.testing.assert_allclose(plotly_array(heat["data"][0]["z"]), step.attention[0], atol=1e-6)
    assert heat["layout"]["yaxis"]["title"]["text"] == "head"


def test_sequence_heatmap_rows_are_queries_with_masked_cells_blank(tiny):
    from txviz.generation.figures import sequence_heatmap
    from txviz.generation.loop import sequence_tokens

    prompt = prepare(tiny, GenerationRequest("the cat sat"))
    steps = list(generate(tiny, GenerationRequest("the cat sat", 4), prompt))
    tokens = sequence_tokens(prompt, steps)
    figure = sequence_heatmap(steps, tokens, layer=0, head=1).to_dict()
    z = plotly_array(figure["data"][0]["z"]).astype(float)
    assert figure["data"][0]["y"] == [2, 3, 4, 5]
    np.testing.assert_allclose(z[1, :4], steps[1].attention[0, 1].astype(np.float32))
    assert np.isnan(z[1, 4:]).all() and not np.isnan(z[3]).any()
    assert figure["layout"]["yaxis"]["ticktext"] == list(tokens[2:6])


def test_kv_cache_figures_match_the_steps(tiny):
    from txviz.generation.figures import kv_cache_growth, kv_cache_per_layer

    steps = list(generate(tiny, GenerationRequest("the cat sat", 3)))
    growth = kv_cache_growth(steps, current=1).to_dict()["data"][0]
    assert growth["y"] == pytest.approx([sum(s.kv_bytes) / 1e6 for s in steps])
    assert list(growth["customdata"]) == [3, 4, 5]
    per_layer = kv_cache_per_layer(steps[-1]).to_dict()["data"][0]
    assert list(per_layer["customdata"]) == [5, 5]
    assert per_layer["y"] == pytest.approx([b / 1e3 for b in steps[-1].kv_bytes])


def test_another_architecture_gpt2_matches_model_generate(tiny):
    model = tiny_model("gpt2", len(tiny.tokenizer), seed=1, n_positions=64, eos_token_id=0)
    gpt2 = LoadedModel("tiny-gpt2", "decoder", model, tiny.tokenizer, None, "cpu")
    steps = list(generate(gpt2, GenerationRequest("the cat sat", max_new_tokens=6, stop_at_eos=False)))
    assert [s.token_id for s in steps] == greedy_reference(gpt2, "the cat sat", 6)
    assert steps[-1].attention.shape == (2, 4, 8)
    assert steps[-1].kv_tokens == (8, 8)  # GPT-2 caches keys and values of all 4 heads
    assert steps[-1].kv_bytes == (2 * 4 * 8 * 8 * 4,) * 2
