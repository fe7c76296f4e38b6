"""Why this token on the shipped models: date-bart's source attribution and SmolLM2's step explanation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.core.running import run
from txviz.explain.seq2seq import attribute_source
from txviz.explain.step import explain_attribution, step_context
from txviz.generation.loop import GenerationRequest, generate, prepare
from txviz.seq2seq.decoding import decode, decoder_start_id, encode_source

SOURCE = "the twenty-second of November 2026"


@pytest.fixture(scope="module")
def date_bart():
    from txviz import models

    return models.load("date-bart", "cpu")


def test_date_bart_reads_the_same_from_embeddings_as_from_ids(date_bart):
    """The attribution runs from the encoder's own embedding module: it must give the model's logits."""
    ids, _ = encode_source(date_bart, SOURCE)
    decoder_ids = torch.tensor([[decoder_start_id(date_bart)]])
    by_ids = run(date_bart.model, outputs=("logits",), input_ids=ids, decoder_input_ids=decoder_ids).logits
    embeds = date_bart.model.get_encoder().embed_tokens(ids)
    by_embeds = run(date_bart.model, outputs=("logits",), inputs_embeds=embeds, decoder_input_ids=decoder_ids)
    torch.testing.assert_close(by_embeds.logits, by_ids, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("method", ["gradient", "ig", "ablation"])
def test_date_bart_source_attribution_has_one_value_per_source_token(date_bart, method):
    trace = decode(date_bart, SOURCE)
    explained = attribute_source(date_bart, SOURCE, trace, 3, method, steps=8)
    assert explained.attribution.shape == explained.cross_attention.shape == (len(trace.source_tokens),)
    np.testing.assert_allclose(explained.cross_attention.sum(), 1.0, atol=1e-4)
    assert np.abs(explained.attribution).sum() > 0
    special = np.array(trace.cross.special)
    assert special.any()
    if method != "gradient":  # special tokens (</s>) are kept in the baseline: nothing is attributed to them
        assert not explained.attribution[special].any() and explained.attribution[~special].any()


def test_smollm2_ig_splits_the_change_in_log_probability(smollm2):
    """Integrated gradients' completeness: the attributions sum to f(input) - f(baseline)."""
    request = GenerationRequest("The capital of France is", 1)
    prompt = prepare(smollm2, request)
    steps = list(generate(smollm2, request, prompt))
    context, chosen = step_context(prompt.ids, [s.token_id for s in steps], 0)
    explained = explain_attribution(smollm2, context, chosen, methods=("ig", "ablation"), steps=32)
    embeds = smollm2.model.get_input_embeddings()(torch.tensor([context]))
    reference = torch.zeros_like(embeds)
    reference[:, 0] = embeds[:, 0]
    change = [
        torch.log_softmax(run(smollm2.model, outputs=("logits",), inputs_embeds=e).logits[0, -1], -1)[chosen]
        for e in (embeds, reference)
    ]
    assert explained.scores["ig"].sum() == pytest.approx(
        float(change[0] - change[1]), rel=0.1
    )  # 32 steps: ~6% off
    # the sink stays as it is in the baseline (ablation: batched forwards differ by rounding only)
    assert explained.scores["ig"][0] == 0 and abs(explained.scores["ablation"][0]) < 1e-4
