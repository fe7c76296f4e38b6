"""The entailment equation numbers match the book's (15.46)-(15.53) in code and docstrings alike."""

from __future__ import annotations

import pytest

from txviz.entailment import contextual
from txviz.entailment.equations import NUMBERS, numbered, tag
from txviz.entailment.model import DecomposableAttention

# probml section 15.4.6, as printed: each side is attended, compared and summed in turn.
BOOK = [
    ("e_ij", "15.46"),
    ("beta_i", "15.47"),
    ("v_A,i", "15.48"),
    ("v_A", "15.49"),
    ("alpha_j", "15.50"),
    ("v_B,j", "15.51"),
    ("v_B", "15.52"),
    ("y", "15.53"),
]


def test_numbers_follow_the_book():
    assert list(NUMBERS.items()) == BOOK
    assert tag("alpha_j") == "(15.50)"


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (DecomposableAttention.attend, ["(15.46) e_ij", "(15.47) beta_i", "(15.50) alpha_j"]),
        (DecomposableAttention.compare, ["(15.48) v_A,i", "(15.51) v_B,j"]),
        (DecomposableAttention.aggregate, ["(15.49) v_A ", "(15.52) v_B "]),
        (DecomposableAttention.classify, ["(15.53) y"]),
        (contextual.alignment, ["(15.46), (15.47) and (15.50)"]),
    ],
)
def test_docstrings_carry_the_book_numbers(function, expected):
    for text in expected:
        assert text in function.__doc__
    assert "{" not in function.__doc__


def test_unknown_symbol_in_a_docstring_fails_loudly():
    def f():
        """{gamma} nothing."""

    with pytest.raises(KeyError):
        numbered(f)
