"""GPT vs BERT objectives: next-token terms at every position, masked-word terms, the tiny BERT."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.core.errors import WrongModelKind
from txviz.objectives import causal, corpus, masked
from txviz.training import mlm


def test_next_token_terms_average_to_the_models_own_loss(smollm2):
    text = "The cat sat on the mat because it was tired."
    objective = causal.next_token_objective(smollm2, text)
    ids = smollm2.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        loss = smollm2.model(input_ids=ids, labels=ids).loss.item()
    assert len(objective.probabilities) == len(objective.tokens) - 1 == ids.shape[1] - 1
    assert objective.mean_loss == pytest.approx(loss, abs=1e-4)
    assert ((objective.probabilities > 0) & (objective.probabilities <= 1)).all()


def test_next_token_bad_input(smollm2, minilm):
    with pytest.raises(masked.ObjectiveError, match="empty"):
        causal.next_token_objective(smollm2, " ")
    with pytest.raises(masked.ObjectiveError, match="one token"):
        causal.next_token_objective(smollm2, "The")
    with pytest.raises(WrongModelKind, match="Choose a decoder"):
        causal.next_token_objective(minilm, "The cat")
    long = causal.next_token_objective(smollm2, "word " * 200)
    assert "only the first 64" in long.notice and len(long.tokens) == 64


def test_corpus_split_is_fixed_and_disjoint():
    train, heldout = corpus.train_and_heldout()
    assert not set(train) & set(heldout)
    assert len(heldout) == int(len(corpus.sentences()) * corpus.HELDOUT_SHARE)
    assert corpus.train_and_heldout() == (train, heldout)


@pytest.fixture(scope="module")
def tiny_bert():
    return masked.load_mlm()


def test_shipped_tiny_bert_accuracy_reproduces_on_the_fixed_subset(tiny_bert):
    meta = masked.read_meta()
    _, heldout = corpus.train_and_heldout(corpus.SEED)
    subset = masked.masked_accuracy(tiny_bert, heldout[: masked.SUBSET_SENTENCES])
    assert subset == pytest.approx(meta["subset_masked_accuracy"], abs=1e-9)
    assert meta["heldout_masked_accuracy"] > 2 * meta["unigram_baseline_accuracy"]


def test_unigram_baseline_by_hand():
    guess, accuracy = masked.unigram_accuracy(["a b a", "a c"], ["a x", "b a a"])
    assert guess == "a" and accuracy == pytest.approx(3 / 5)


def test_masked_prediction_has_terms_only_where_masked(tiny_bert):
    prediction = masked.predict_masked(tiny_bert, "the dog barks loudly in the garden", [2, 5])
    assert prediction.tokens[0] == "[CLS]" and prediction.tokens[-1] == "[SEP]"
    assert prediction.masked == (3, 6) and prediction.losses.shape == (2,)
    np.testing.assert_allclose(prediction.losses, -np.log(prediction.true_probability))
    assert prediction.top[0][0][0] == "barks"  # 'the dog [MASK] loudly in the garden'
    rows = masked.prediction_rows(prediction)
    assert [r["hidden word"] for r in rows] == ["barks", "the"]


def test_masked_prediction_bad_input(tiny_bert):
    tokenizer = tiny_bert.tokenizer
    with pytest.raises(masked.ObjectiveError, match="empty"):
        masked.predict_masked(tiny_bert, "  ", [0])
    with pytest.raises(masked.ObjectiveError, match="at least one"):
        masked.predict_masked(tiny_bert, "the dog", [])
    with pytest.raises(masked.ObjectiveError, match="2 words"):
        masked.predict_masked(tiny_bert, "the dog", [4])
    words, notice = masked.sentence_words(tokenizer, "the dog " * 20, 14)
    assert len(words) == 14 and "at most 14" in notice


def test_mask_batch_hides_at_least_one_word_per_sentence():
    tokenizer = mlm.build_tokenizer()
    batch = mlm.mask_batch(tokenizer, ["the dog barks", "the sky is blue"], torch.Generator().manual_seed(0))
    assert ((batch["labels"] != -100).sum(dim=1) >= 1).all()
    assert (batch["labels"][:, 0] == -100).all()  # never [CLS]


def test_training_on_a_tiny_budget_lowers_the_loss():
    _, _, losses = mlm.train(steps=60, batch_size=32, lr=3e-3, seed=0, log=lambda _: None)
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.5
