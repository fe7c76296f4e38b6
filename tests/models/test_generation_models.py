"""Generation on the packaged SmolLM2: greedy equals model.generate, the chat template, the benchmark."""

from __future__ import annotations

import numpy as np
import torch

from txviz.core.capture import CaptureSettings, capture
from txviz.generation.loop import (
    GenerationRequest,
    generate,
    prepare,
)
from txviz.models import LoadedModel


def prompt_ids(loaded: LoadedModel, text: str) -> torch.Tensor:
    return torch.tensor([loaded.tokenizer(text)["input_ids"]])


# The packaged SmolLM2: the real model the page defaults to.


def test_smollm2_greedy_matches_model_generate_and_rows_match(smollm2):
    prompt = "The capital of France is"
    steps = list(generate(smollm2, GenerationRequest(prompt, max_new_tokens=5, stop_at_eos=False)))
    ids = prompt_ids(smollm2, prompt)
    expected = smollm2.model.generate(ids, do_sample=False, max_new_tokens=5, min_new_tokens=5)
    assert [s.token_id for s in steps] == expected[0, ids.shape[1] :].tolist()
    full_ids = torch.cat([ids, torch.tensor([[s.token_id for s in steps]])], dim=1)
    with torch.no_grad(), capture(smollm2.model, CaptureSettings(record={"weights"})) as rec:
        smollm2.model(input_ids=full_ids)
    full = rec.stack("weights")  # (30, 9, T, T)
    last = steps[-1]
    assert last.attention.shape == (30, 9, last.position)
    np.testing.assert_allclose(last.attention, full[:, :, last.query_position, : last.position], atol=2e-3)
    # 3 KV heads x 64 dims, keys and values, float32
    assert last.kv_bytes == (2 * 3 * 64 * last.position * 4,) * 30


def test_smollm2_chat_template_wraps_the_prompt(smollm2):
    plain = prepare(smollm2, GenerationRequest("Hi"))
    chat = prepare(smollm2, GenerationRequest("Hi", chat=True))
    assert plain.text == "Hi" and "<|im_start|>user\nHi<|im_end|>" in chat.text
    assert chat.text.endswith("<|im_start|>assistant\n")
    assert len(chat) > len(plain)


def test_benchmark_runs_and_reports_ratios(smollm2, capsys):
    from txviz.bench.generate import main

    main(["--tokens", "3", "--repeats", "1", "--threads", "0"])  # leave the session's threads
    out = capsys.readouterr().out
    assert "throughput ratio (loop / plain): wall" in out and "greedy tokens: same" in out
    assert "attention held for 1,024 new tokens (30 layers x 9 heads" in out


def test_smollm2_engine_tokens_equal_lone_runs_greedy_and_seeded(smollm2):
    import threading

    from txviz.generation.batching import GenerationEngine
    from txviz.generation.sampling import SamplingSettings

    requests = [
        GenerationRequest(f"Write one sentence about a {word}.", 6, sampling, stop_at_eos=False)
        for word, sampling in [
            ("river", SamplingSettings(0.0)),
            ("castle in the snow", SamplingSettings(0.0)),
            ("tiger", SamplingSettings(0.8, 40, 0.95, seed=3)),
            ("violin", SamplingSettings(1.2, 0, 0.9, seed=11)),
        ]
    ]
    engine, results = GenerationEngine(smollm2, max_batch=4), [None] * len(requests)

    def session(i):
        results[i] = list(engine.submit(requests[i], owner=f"s{i}").steps())

    threads = [threading.Thread(target=session, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    engine.close()
    assert engine.largest_batch > 1
    for request, steps in zip(requests, results, strict=True):
        alone = list(generate(smollm2, request))
        assert [s.token_id for s in steps] == [s.token_id for s in alone]
        last, lone_last = steps[-1], alone[-1]
        assert last.attention.shape == lone_last.attention.shape == (30, 9, last.position)
        np.testing.assert_allclose(last.attention, lone_last.attention, atol=2e-3)
