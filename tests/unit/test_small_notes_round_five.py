"""The audit's last small notes: probml's d = 4 row of eq. 15.58 and its bound T <= C on the Positional
Encoding page (numbers checked by hand), and the ConvNeXt line beside the ViT transfer table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ROOT

from txviz.positional import encodings as pe
from txviz.vision import book


def test_the_d4_row_is_the_books_row_in_numbers():
    for base in (100, 10000):
        c = float(base)
        by_hand = [math.sin(1), math.cos(1), math.sin(1 / math.sqrt(c)), math.cos(1 / math.sqrt(c))]
        note = pe.book_rows_note(32, base)
        assert f"[{', '.join(f'{v:.4f}' for v in by_hand)}]" in note
    assert r"C^{0/4}" in pe.BOOK_D4_ROW and r"C^{2/4}" in pe.BOOK_D4_ROW


@pytest.mark.parametrize(("d", "base"), [(32, 10000), (16, 1000), (8, 100), (4, 10000)])
def test_the_slowest_pair_turns_c_to_the_2_over_d_radians_over_c_positions(d, base):
    turn = pe.slowest_turn(base, d, base)
    assert turn == pytest.approx(base ** (2 / d), rel=1e-12)
    if turn < np.pi:  # the angle read back from the table itself (positions up to C, when they fit)
        encoding = pe.sinusoidal_encoding(base, d, base) if base <= pe.MAX_POSITIONS else None
        if encoding is not None:
            sin, cos = encoding[-1, d - 2], encoding[-1, d - 1]
            assert math.atan2(sin, cos) == pytest.approx((base - 1) / base ** ((d - 2) / d), rel=1e-9)
            assert np.all(np.diff(encoding[:, d - 1]) < 0)  # its cosine falls all the way
    note = pe.book_rows_note(d, base)
    assert "T ≤ C" in note and f"{turn:.2f} radians for d = {d}" in note
    assert ("less than π" in note) == (turn < np.pi)


def test_the_positional_page_shows_the_row_and_the_bound():
    page = (ROOT / "txviz" / "positional" / "views.py").read_text()
    assert "st.latex(pe.BOOK_D4_ROW)" in page and "st.caption(pe.book_rows_note(d, base))" in page


def test_convnext_is_beside_the_transfer_table():
    assert "ConvNeXt (Liu et al. 2022, *A ConvNet for the 2020s*)" in book.CONVNEXT
    assert "matched Swin Transformers" in book.CONVNEXT
    assert "st.caption(book.CONVNEXT)" in (ROOT / "txviz" / "vision" / "views.py").read_text()
