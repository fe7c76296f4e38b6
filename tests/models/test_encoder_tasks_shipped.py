"""The shipped probes on the frozen tiny BERT: held-out numbers recomputed here, <cls>'s attention checked."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.core.threads import torch_threads
from txviz.objectives import encoder_tasks as tasks
from txviz.objectives.masked import load_mlm


@pytest.fixture(scope="module")
def bert():
    return load_mlm()


def test_held_out_numbers_reproduce_from_the_shipped_probes(bert):
    probes = tasks.load_probes()
    _, heldout = tasks.train_and_heldout()
    with torch_threads(1):
        found = tasks.features(bert, [e.text for e in heldout])
    labels = np.array([e.label for e in heldout])
    sentence = np.mean((probes.sentence_false_probability(found.cls) > 0.5) == labels)
    assert sentence == pytest.approx(probes.runs["sentence_accuracy"], abs=1e-9)
    tags = [(probes.word_wrong_probability(w) > 0.5).astype(int) for w in found.words]
    assert tasks.tag_scores(tags, heldout) == pytest.approx(probes.runs["tagger"])


def test_features_are_the_encoders_last_layer_and_cls_attention_its_first_row(bert):
    text = "the dog meows loudly in the garden"
    found = tasks.features(bert, [text, "after monday comes tuesday"])
    ids = bert.tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        out = bert.model(**ids, output_hidden_states=True, output_attentions=True)
    last = out.hidden_states[-1][0].numpy()
    assert np.allclose(found.cls[0], last[0], atol=1e-5)
    assert np.allclose(found.words[0], last[1:-1], atol=1e-5)
    expected = np.stack([a[0, :, 0].numpy() for a in out.attentions])  # (layers, heads, T)
    assert np.allclose(found.cls_attention[0], expected, atol=1e-5)
    assert found.cls_attention[1].shape[-1] == 6  # padding left out: [CLS], four words, [SEP]


def test_read_marks_the_swapped_word_and_refuses_unknown_words(bert):
    reading = tasks.read(bert, tasks.load_probes(), tasks.EXAMPLE)
    assert reading.tokens[0] == "[CLS]" and len(reading.wrong_probability) == 7
    assert np.allclose(reading.cls_attention.sum(-1), 1, atol=1e-5)
    with pytest.raises(tasks.EncoderTaskError, match="zebra"):
        tasks.read(bert, tasks.load_probes(), "the zebra barks")
    with pytest.raises(tasks.EncoderTaskError, match="empty"):
        tasks.read(bert, tasks.load_probes(), "   ")
