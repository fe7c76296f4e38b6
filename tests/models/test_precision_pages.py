"""Every page's computation with bfloat16 weights on the CPU: it runs, and what it returns is float32
(records and outputs), finite wherever the float32 model's is."""

import pytest
from topic_calls import PACKAGED, assert_reduced_precision, calls_for, cpu_outcome, loaded_model, outcome

CASES = [(model, call) for model, kind in PACKAGED.items() for call in calls_for(kind)]


@pytest.mark.parametrize(("model", "call"), CASES, ids=[f"{m}-{c}" for m, c in CASES])
def test_a_page_computation_runs_in_bfloat16(model, call):
    half = loaded_model(model, "cpu", "bfloat16")
    assert half.dtype == "bfloat16"
    assert_reduced_precision(outcome(half, call), cpu_outcome(model, call))
