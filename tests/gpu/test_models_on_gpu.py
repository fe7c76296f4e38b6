"""Each page's computation with the model on a GPU equals the CPU run; in float16 and bfloat16 it
records float32, finite numbers.

Models: the packaged ones (an encoder, a decoder, an encoder-decoder, a ViT) and tiny random models
of a few families saved as folders (tests need no network). float32 on the GPU against the CPU:
within 1e-4 (attention) and greedy tokens equal; reduced precision changes numbers by about 1%
and may change greedy tokens, so it is checked for dtype, finiteness and rows summing to 1.
"""

from __future__ import annotations

import pytest
import torch
from gpu_devices import needs_cuda
from topic_calls import (
    PACKAGED,
    assert_reduced_precision,
    assert_same,
    calls_for,
    cpu_outcome,
    loaded_model,
    outcome,
)

from txviz.families import zoo

FAMILIES = {"Llama": "decoder", "GPT-2": "decoder", "Gemma 2": "decoder", "BERT": "encoder",
            "T5": "encoder-decoder", "ViT": "vision"}  # fmt: skip
MODELS = {**PACKAGED, **FAMILIES}
CASES = [(model, call) for model, kind in MODELS.items() for call in calls_for(kind)]
IDS = [f"{model}-{call}" for model, call in CASES]


@pytest.fixture(scope="session")
def sources(tmp_path_factory) -> dict[str, str]:
    """What models.load takes for each model: a registry name, or a tiny family's folder."""
    folders = zoo.folders(tmp_path_factory.mktemp("gpu-zoo"), set(FAMILIES))
    return {**{name: name for name in PACKAGED}, **{name: str(folders[name]) for name in FAMILIES}}


@pytest.mark.parametrize(("model", "call"), CASES, ids=IDS)
def test_a_page_computation_on_a_gpu_equals_the_cpu_run(device, sources, model, call):
    expected = cpu_outcome(sources[model], call)
    loaded = device.load(sources[model])
    assert loaded.kind == MODELS[model] and loaded.device.startswith("cuda")
    assert loaded.model.device.type == "cuda"
    assert_same(outcome(loaded, call), expected, atol=1e-4, rtol=1e-3)


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize(("model", "call"), CASES, ids=IDS)
def test_a_page_computation_in_reduced_precision_on_a_gpu(sources, model, call, dtype):
    loaded = loaded_model(sources[model], "cuda", dtype)
    assert next(loaded.model.parameters()).dtype == getattr(torch, dtype)
    assert_reduced_precision(outcome(loaded, call), cpu_outcome(sources[model], call))
