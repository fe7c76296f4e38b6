"""Continuous batching: each session's tokens and attention are what it would get alone."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from test_generation import tiny  # noqa: F401 - the shared tiny Llama fixture

from txviz.generation.batching import GenerationEngine, Waiting, _first_keys, _Rows
from txviz.generation.loop import GenerationError, GenerationRequest, generate
from txviz.generation.sampling import SamplingSettings

PROMPTS = [
    "the cat sat",
    "the dog sat on the log and the cat",
    "on the mat",
    "the",
    "the cat sat on the mat and the dog sat on",
    "dog",
    "sat on the log",
    "the mat and the dog",
]


@pytest.fixture
def engines(tiny):  # noqa: F811
    """Make engines on the tiny model and stop their loops after the test."""
    made = []

    def make(max_batch=8):
        made.append(GenerationEngine(tiny, max_batch=max_batch))
        return made[-1]

    yield make
    for engine in made:
        engine.close()


def lone(loaded, request):
    return list(generate(loaded, request))


def batched(engine, requests, stagger=0):
    """Run every request through one engine at once; stagger: steps between joins."""
    results = [None] * len(requests)

    def session(i):
        results[i] = list(engine.submit(requests[i], owner=f"s{i}").steps())

    threads = [threading.Thread(target=session, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def greedy(prompt, n=12):
    return GenerationRequest(prompt, n, SamplingSettings(0.0), stop_at_eos=False)


def test_greedy_tokens_and_attention_equal_the_lone_run_with_seven_others(tiny, engines):  # noqa: F811
    requests = [greedy(p, 8 + i) for i, p in enumerate(PROMPTS)]
    engine = engines(8)
    together = batched(engine, requests)
    assert engine.largest_batch > 1  # they really shared forwards
    for request, steps in zip(requests, together, strict=True):
        alone = lone(tiny, request)
        assert [s.token_id for s in steps] == [s.token_id for s in alone]
        for a, b in zip(steps, alone, strict=True):
            assert a.attention.shape == b.attention.shape  # padding columns cut off
            np.testing.assert_allclose(a.attention, b.attention, atol=2e-3)
            np.testing.assert_allclose(a.attention.astype(np.float32).sum(-1), 1.0, atol=5e-3)
            assert a.kv_tokens == b.kv_tokens and a.kv_bytes == b.kv_bytes


def test_sampled_tokens_with_a_seed_equal_the_lone_run(tiny, engines):  # noqa: F811
    requests = [
        GenerationRequest(p, 10, SamplingSettings(1.0, 20, 0.9, seed=i), stop_at_eos=False)
        for i, p in enumerate(PROMPTS[:5])
    ]
    together = batched(engines(8), requests)
    for request, steps in zip(requests, together, strict=True):
        assert [s.token_id for s in steps] == [s.token_id for s in lone(tiny, request)]


def test_a_full_batch_queues_the_rest_in_order_and_says_where_they_stand(tiny, engines):  # noqa: F811
    engine = engines(2)
    tickets = [engine.submit(greedy(p, 40), owner=f"s{i}") for i, p in enumerate(PROMPTS[:4])]
    waits = []
    for event in tickets[3].events():
        if isinstance(event, Waiting):
            waits.append(event.ahead)
        else:
            break
    assert waits and waits[0] >= 1 and waits == sorted(waits, reverse=True)
    for ticket in tickets:
        ticket.cancel()


def test_a_session_runs_one_job_at_a_time_and_a_closed_stream_frees_its_row(tiny, engines):  # noqa: F811
    engine = engines(4)
    first = engine.submit(greedy("the cat sat", 60), owner="same")
    first_steps = first.steps()
    next(first_steps)  # the first is running
    second = engine.submit(greedy("the dog", 5), owner="same")
    assert len(list(first_steps)) < 59  # the first was cancelled: its stream ends early
    assert len(list(second.steps())) == 5
    stream = engine.submit(greedy("on the mat", 55), owner="other").steps()
    next(stream)
    stream.close()  # a closed tab: Streamlit stops the script, the generator is closed
    deadline = 50
    while engine.load()[0] and deadline:
        threading.Event().wait(0.1)
        deadline -= 1
    assert engine.load() == (0, 0)


def test_bad_requests_fail_before_queueing(tiny, engines):  # noqa: F811
    with pytest.raises(GenerationError):
        engines().submit(GenerationRequest("   ", 4))


def test_sessions_arriving_together_share_one_prefill(tiny, engines):  # noqa: F811
    engine = engines(8)
    requests = [greedy(p, 3) for p in PROMPTS]
    together = batched(engine, requests)
    assert all(len(steps) == 3 for steps in together)
    assert engine.largest_batch == 8
    assert engine.prefills_run < len(PROMPTS)  # the gather window let them join in one go or few


def test_a_left_padded_prefill_holds_each_prompts_own_keys_and_values(tiny):  # noqa: F811
    from txviz.generation.loop import prefill, prefill_batch, prepare

    prompts = [prepare(tiny, greedy(p)) for p in PROMPTS[:4]]
    cache, valid = prefill_batch(tiny, prompts)
    assert valid.sum(1).tolist() == [len(p) - 1 for p in prompts]
    for b, prompt in enumerate(prompts):
        alone = prefill(tiny, prompt)
        for mine, own in zip(cache.layers, alone.layers, strict=True):
            if own.keys is None or own.keys.numel() == 0:
                continue
            real = mine.keys[b][:, valid[b]]
            assert torch.isfinite(mine.keys).all() and torch.isfinite(mine.values).all()
            torch.testing.assert_close(real, own.keys[0], atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(mine.values[b][:, valid[b]], own.values[0], atol=1e-5, rtol=1e-4)


def test_attention_rows_sliced_equal_rows_masked_on_random_weights():
    """_Rows reads a left-padded row by slicing and converts in torch: the same float16 as the mask did."""
    generator = torch.Generator().manual_seed(0)
    stacked = torch.rand(4, 3, 5, 40, generator=generator)
    stacked[..., :10] *= 1e-5  # float16's subnormals
    stacked[..., 10:20] = torch.rand(4, 3, 5, 10, generator=generator) * 2**-14
    # Halfway between two float16s: each rounds to the even one.
    stacked[0, 0, 0, -4:] = torch.tensor([0.5 + 2**-12, 0.5 + 3 * 2**-12, 1 - 2**-12, 1e-8])
    valid = torch.ones(4, 40, dtype=torch.bool)
    valid[1, :7] = False
    valid[2, :39] = False
    valid[3, [2, 5]] = False  # not left-padding: read through the mask
    first = _first_keys(valid)
    assert first == [0, 7, 39, None]
    for b in range(4):
        old = stacked[b][:, :, valid[b]].numpy().astype(np.float16)
        new = _Rows(stacked, b, valid[b], first[b]).array()
        assert new.dtype == old.dtype and new.shape == old.shape and new.flags.c_contiguous
        np.testing.assert_array_equal(new, old)
        assert np.array_equal(np.signbit(new), np.signbit(old))
