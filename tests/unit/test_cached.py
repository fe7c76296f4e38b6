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
    cpu = SimpleNamespace(name="m", device="cpu", dtype="float32")
    first = shared(cpu, 3)
    assert shared(SimpleNamespace(name="m", device="cpu", dtype="float32"), 3) is first and make.calls == 1
    assert (
        shared(SimpleNamespace(name="m", device="cuda", dtype="float32"), 3) is not first
    )  # device in the key
    assert shared(SimpleNamespace(name="m", device="cpu", dtype="bfloat16"), 3) is not first  # precision too
    assert shared(SimpleNamespace(name="other", device="cpu", dtype="float32"), 3) is not first
    assert shared(cpu, 4) is not first and make.calls == 5
    for array in (first.weights, first.rows[0], first.by_name["a"][0]):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 7


def test_two_cached_functions_with_one_wrapper_keep_apart():
    other = ui.cached(spinner=False)(lambda loaded, n: ("other", n))
    cpu = SimpleNamespace(name="m", device="cpu", dtype="float32")
    assert other(cpu, 3) == ("other", 3) and isinstance(shared(cpu, 3), Result)


def test_lock_arrays_walks_containers_and_returns_the_value():
    value = {"x": (np.zeros(2), [np.ones(1)])}
    assert lock_arrays(value) is value
    assert not value["x"][0].flags.writeable and not value["x"][1][0].flags.writeable


def test_progress_gives_the_function_an_update_and_the_result_is_shared():
    seen = []

    @ui.cached(spinner=False, progress="Working...")
    def counted(loaded, n: int, progress):
        progress(0.5, "half way")
        seen.append(n)
        return np.arange(n)

    cpu = SimpleNamespace(name="m", device="cpu", dtype="float32")
    first = counted(cpu, 3)
    assert counted(cpu, 3) is first and seen == [3] and not first.flags.writeable


def test_shared_resource_keys_every_argument_and_locks_arrays():
    calls = []

    @ui.shared_resource(max_entries=4)
    def table(n: int, scale: float) -> dict:
        calls.append((n, scale))
        return {"x": np.full(n, scale)}

    first = table(2, 1.0)
    assert table(2, 1.0) is first and table(2, 2.0) is not first and calls == [(2, 1.0), (2, 2.0)]
    assert not first["x"].flags.writeable


def test_cached_data_gives_each_caller_its_own_copy():
    @ui.cached_data(max_entries=4)
    def words(text: str) -> list[str]:
        return text.split()

    first = words("a b")
    first.append("changed")
    assert words("a b") == ["a", "b"]


def _raise_inside_user_errors(kind: str) -> None:
    from txviz.app import ui
    from txviz.core.errors import UserError

    with ui.user_errors():
        if kind == "user":
            raise UserError("That text is empty: type some text first.")
        list(zip([1, 2], [1], strict=True))  # a programming ValueError: lengths differ


def test_user_errors_shows_a_user_error_and_lets_a_programming_value_error_through():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_raise_inside_user_errors, args=("user",), default_timeout=30).run()
    assert not at.exception and [e.value for e in at.error] == ["That text is empty: type some text first."]
    at = AppTest.from_function(_raise_inside_user_errors, args=("bug",), default_timeout=30).run()
    assert not at.error and "zip()" in at.exception[0].value


def test_functions_of_one_name_on_two_pages_keep_apart():
    """Every page script runs as __main__: page 12's held_out must not answer page 13's held_out."""
    made = {}
    for page, value in (("12_Image_GPT", 2), ("13_Image_Captioning", 3)):
        scope = {"__name__": "__main__"}
        exec(compile(f"def held_out():\n    return {value}\n", f"pages/{page}.py", "exec"), scope)
        made[page] = ui.shared_resource()(scope["held_out"])
    assert made["12_Image_GPT"]() == 2 and made["13_Image_Captioning"]() == 3
