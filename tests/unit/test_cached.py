"""ui.cached: one result per model, device and arguments, shared and locked read-only."""

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest

from txviz.app import ui
from txviz.core.trace import lock_arrays


@dataclass(frozen=True)
class Result:
    weights: np.ndarray
    rows: tuple
    by_name: dict


def make(loaded, n: int) -> Result:
    make.calls += 1
    return Result(np.zeros(n), (np.ones(2),), {"a": [np.arange(3)]})


make.calls = 0
shared = ui.cached(max_entries=4, spinner=False)(make)


def test_same_model_device_and_arguments_share_one_locked_result():
    cpu = SimpleNamespace(name="m", device="cpu")
    first = shared(cpu, 3)
    assert shared(SimpleNamespace(name="m", device="cpu"), 3) is first and make.calls == 1
    assert shared(SimpleNamespace(name="m", device="cuda"), 3) is not first  # device in the key
    assert shared(SimpleNamespace(name="other", device="cpu"), 3) is not first
    assert shared(cpu, 4) is not first and make.calls == 4
    for array in (first.weights, first.rows[0], first.by_name["a"][0]):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 7


def test_two_cached_functions_with_one_wrapper_keep_apart():
    other = ui.cached(spinner=False)(lambda loaded, n: ("other", n))
    cpu = SimpleNamespace(name="m", device="cpu")
    assert other(cpu, 3) == ("other", 3) and isinstance(shared(cpu, 3), Result)


def test_lock_arrays_walks_containers_and_returns_the_value():
    value = {"x": (np.zeros(2), [np.ones(1)])}
    assert lock_arrays(value) is value
    assert not value["x"][0].flags.writeable and not value["x"][1][0].flags.writeable
