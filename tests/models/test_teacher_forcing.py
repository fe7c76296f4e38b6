"""Teacher forcing against free running on date-bart: equal until the first mistake, then apart."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz import models
from txviz.seq2seq import teacher
from txviz.seq2seq.decoding import decode


@pytest.fixture(scope="module")
def bart():
    return models.load("date-bart", "cpu")


def test_a_correct_reference_never_diverges(bart):
    source = bart.meta["example_source"]
    comparison = teacher.compare(bart, source, "2026-11-22")
    assert comparison.divergence is None
    assert comparison.free_text == comparison.forced_text == decode(bart, source).output_text == "2026-11-22"
    for step in comparison.steps:  # same prefixes, so the same numbers
        assert step.forced_reference_probability == pytest.approx(step.free_reference_probability, abs=1e-5)


def test_1945_diverges_at_the_third_digit(bart):
    comparison = teacher.compare(bart, teacher.DEFAULT_SOURCE, teacher.DEFAULT_REFERENCE)
    assert comparison.free_text == "1955-05-05" and comparison.divergence == 2
    step = comparison.steps[2]
    assert (step.reference, step.forced_prediction, step.free_prediction) == ("4", "5", "5")
    after = comparison.steps[3]
    assert (after.forced_input, after.free_input) == ("4", "5")  # the inputs part ways
    assert comparison.forced_correct == len(comparison.steps) - 1


def test_forced_probabilities_are_one_pass_over_the_reference(bart):
    comparison = teacher.compare(bart, teacher.DEFAULT_SOURCE, teacher.DEFAULT_REFERENCE)
    source_ids = bart.tokenizer(teacher.DEFAULT_SOURCE, return_tensors="pt")["input_ids"]
    reference_ids = bart.tokenizer(teacher.DEFAULT_REFERENCE)["input_ids"]
    with torch.no_grad():
        out = bart.model(input_ids=source_ids, labels=torch.tensor([reference_ids]))
    losses = -np.log([s.forced_reference_probability for s in comparison.steps])
    assert losses.mean() == pytest.approx(out.loss.item(), rel=1e-4)  # the training loss, term by term


def test_bad_references(bart):
    with pytest.raises(teacher.TeacherForcingError, match="empty"):
        teacher.compare(bart, teacher.DEFAULT_SOURCE, " ")
    with pytest.raises(teacher.TeacherForcingError, match="cannot write"):
        teacher.compare(bart, teacher.DEFAULT_SOURCE, "1945/05/05")
    rows = teacher.step_rows(teacher.compare(bart, teacher.DEFAULT_SOURCE, "1945"))
    assert rows[-1]["reference"] == "" or rows[-1]["free: predicts"] == ""  # the shorter one ends first
