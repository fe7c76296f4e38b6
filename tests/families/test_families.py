"""Every feature on every family's tiny model: it works with the model's own numbers, or refuses clearly."""

from __future__ import annotations

import functools

import pytest

from txviz.families import matrix, zoo

pytestmark = pytest.mark.families

# (family, feature) pairs that still fail; each entry is a known defect, not an expectation.
KNOWN: set[tuple[str, str]] = set()


@pytest.fixture(scope="session")
def zoo_root(tmp_path_factory):
    return tmp_path_factory.mktemp("zoo")


@functools.cache
def _results(root, name: str) -> dict[str, matrix.Outcome]:
    folder = zoo.folders(root, {name})[name]
    return matrix.check(zoo.BY_NAME[name], folder)


CASES = [
    pytest.param(f.name, feature, marks=pytest.mark.xfail(strict=True) if (f.name, feature) in KNOWN else ())
    for f in zoo.FAMILIES
    for feature in matrix.FEATURES
]


@pytest.mark.parametrize(("family", "feature"), CASES)
def test_feature_works_or_refuses_clearly(zoo_root, family, feature):
    outcome = _results(zoo_root, family)[feature]
    assert outcome.status != "fails", f"{family} / {feature}: {outcome.detail}"
    if outcome.status == "refuses":
        assert len(outcome.detail) > 40, f"a refusal says why and what works instead: {outcome.detail!r}"


def test_a_wrong_attention_is_caught_by_the_matrix(zoo_root):
    """The comparison itself can fail: a trace whose weights differ from eager attention is a failure."""
    import numpy as np

    with pytest.raises(matrix.Mismatch, match="differs"):
        matrix.close("attention", np.ones((2, 3)), np.ones((2, 3)) * 1.01)
