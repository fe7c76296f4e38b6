"""Decoding all positions at once against left to right, on a random tiny BART over the date words."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import tiny_model

from txviz.core.errors import WrongModelKind
from txviz.models import LoadedModel
from txviz.seq2seq import parallel
from txviz.seq2seq.decoding import _banned, _start_and_end, greedy_ids
from txviz.training import seq2seq as training

SOURCES = ["fifth of may nineteen ninety", "june first two thousand", "the third of march nineteen fifty"]


@pytest.fixture(scope="module")
def tiny_bart() -> LoadedModel:
    tokenizer = training.build_tokenizer()
    model = tiny_model(
        "bart",
        len(tokenizer),
        3,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id,
        forced_eos_token_id=None,
    )
    return LoadedModel("tiny-bart", "encoder-decoder", model, tokenizer, None, "cpu")


def _batch(loaded, sources):
    encoded = loaded.tokenizer(sources, padding=True, return_tensors="pt")
    return encoded.input_ids, encoded.attention_mask


def test_one_pass_is_the_argmax_of_one_pass_over_placeholders(tiny_bart):
    ids, mask = _batch(tiny_bart, SOURCES)
    result = parallel.refine(tiny_bart, ids, mask, 6, 1, "mask-predict")
    start, ends = _start_and_end(tiny_bart)
    decoder_inputs = torch.tensor([[start] + [tiny_bart.tokenizer.unk_token_id] * 5] * len(SOURCES))
    with torch.no_grad():
        logits = tiny_bart.model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_inputs).logits
    logits[..., _banned(tiny_bart, start, ends)] = float("-inf")
    assert (result.tokens[0] == logits.argmax(-1).numpy()).all()
    assert np.allclose(result.confidence[0], torch.softmax(logits, -1).max(-1).values.numpy(), atol=1e-5)
    assert result.masked[0].all()


def test_jacobi_reaches_greedy_within_length_passes(tiny_bart):
    """After pass t the first t tokens are greedy's: a causal decoder's fixed point is greedy's output."""
    length = 7
    ids, mask = _batch(tiny_bart, SOURCES)
    result = parallel.refine(tiny_bart, ids, mask, length, length, "jacobi")
    start, ends = _start_and_end(tiny_bart)
    banned = _banned(tiny_bart, start, ends)
    for row, source in enumerate(SOURCES):
        one, one_mask = _batch(tiny_bart, [source])
        encoded = tiny_bart.model.get_encoder()(input_ids=one, attention_mask=one_mask)
        # greedy without stopping at an end token: the canvas has a fixed length
        greedy = greedy_ids(tiny_bart.model, encoded, one_mask, start, set(), banned, length)[0][1:]
        for t in range(1, length + 1):
            assert result.tokens[t - 1, row, :t].tolist() == greedy[:t]
        assert result.masked.all()  # Jacobi re-predicts every position every pass
        final = next(k for k in range(length) if (result.tokens[k:, row] == result.tokens[-1, row]).all())
        assert result.converged[row] == final + 1


def test_mask_predict_remasks_the_least_confident_on_the_papers_schedule(tiny_bart):
    length, passes = 8, 4
    ids, mask = _batch(tiny_bart, SOURCES)
    result = parallel.refine(tiny_bart, ids, mask, length, passes, "mask-predict")
    for k in range(1, passes):
        counts = result.masked[k].sum(axis=1)
        assert (counts == length * (passes - k) // passes).all()  # 6, 4, 2 of 8
        for row in range(len(SOURCES)):
            redone, kept = result.masked[k, row], ~result.masked[k, row]
            before = result.confidence[k - 1, row]
            assert before[redone].max() <= before[kept].min() + 1e-7  # the least confident were redone
            assert (result.tokens[k, row, kept] == result.tokens[k - 1, row, kept]).all()


def test_bad_settings_are_refused(tiny_bart):
    ids, mask = _batch(tiny_bart, SOURCES[:1])
    with pytest.raises(parallel.ParallelDecodingError):
        parallel.refine(tiny_bart, ids, mask, 5, 0, "jacobi")
    with pytest.raises(parallel.ParallelDecodingError):
        parallel.refine(tiny_bart, ids, mask, 5, 2, "sideways")
    encoder = LoadedModel("enc", "encoder", tiny_bart.model, tiny_bart.tokenizer, None, "cpu")
    with pytest.raises(WrongModelKind):
        parallel.decode_one(encoder, SOURCES[0], 2, "jacobi")


def test_decode_one_uses_greedys_length(tiny_bart):
    one = parallel.decode_one(tiny_bart, SOURCES[0], 3, "mask-predict")
    assert one.confidence.shape == (3, one.greedy_passes)
    assert len(one.canvases) == 3 and all(len(c) == one.greedy_passes for c in one.canvases)
