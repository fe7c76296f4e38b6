"""The book's equation numbers for decomposable attention (probml section 15.4.6), in one place."""

from __future__ import annotations

# The book's own order: each side is attended, compared and summed before the other side starts.
NUMBERS = {
    "e_ij": "15.46",
    "beta_i": "15.47",
    "v_A,i": "15.48",
    "v_A": "15.49",
    "alpha_j": "15.50",
    "v_B,j": "15.51",
    "v_B": "15.52",
    "y": "15.53",
}


def tag(symbol: str) -> str:
    """The equation's number as the book prints it, e.g. '(15.50)' for alpha_j."""
    return f"({NUMBERS[symbol]})"


def numbered(function):
    """Fill a docstring's {e_ij}-style fields with the equation numbers, so code and page agree."""
    function.__doc__ = function.__doc__.format_map({symbol: tag(symbol) for symbol in NUMBERS})
    return function
