"""The results CSV is safe to open in a spreadsheet: no cell starts a formula, and text round-trips."""

from __future__ import annotations

import csv
import io

from txviz.lecture.rooms.export import Asked, cell, results_csv

FORMULAS = ['=HYPERLINK("http://x","y")', "=1+1", "+1", "-2", "@SUM(A1)", "\t=1", "\r=1"]
STARTS = ("=", "+", "-", "@", "\t", "\r")


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_no_cell_of_any_row_starts_a_formula():
    nicknames = {f"s{i}": text for i, text in enumerate(FORMULAS)}
    answers = {f"s{i}": FORMULAS[-1 - i] for i in range(len(FORMULAS))}
    asked = [Asked(prompt, truth, answers) for prompt, truth in zip(FORMULAS, FORMULAS[1:], strict=False)]
    rows = rows_of(results_csv(nicknames, asked))
    assert len(rows) == 1 + len(asked) * len(answers)
    for row in rows:
        assert len(row) == 6
        for value in row:
            assert not value.startswith(STARTS), (row, value)
    written = {value for row in rows[1:] for value in row[:3]}
    assert {"'" + text for text in FORMULAS} <= written  # kept, only made text


def test_plain_values_are_unchanged():
    nicknames = {"a": "Ann", "b": "Bob O'Neil", "c": "über 2 = 2"}
    asked = [Asked("Which token?", "keys", {"a": "keys", "b": "0.4", "c": "a-b"})]
    rows = rows_of(results_csv(nicknames, asked))
    assert rows == [
        ["question", "nickname", "answer", "count", "truth", "right"],
        ["Which token?", "Ann", "keys", "1", "keys", "true"],
        ["Which token?", "Bob O'Neil", "0.4", "1", "keys", "false"],
        ["Which token?", "über 2 = 2", "a-b", "1", "keys", "false"],
    ]
    assert [cell(v) for v in ("", "x=1", " =1", "'=1", 3)] == ["", "x=1", " =1", "'=1", "3"]


def test_the_right_column_compares_the_answers_as_given():
    asked = [Asked("Sign?", "-1", {"a": "-1", "b": "+1"})]
    rows = rows_of(results_csv({"a": "Ann", "b": "Bob"}, asked))
    assert [row[2:] for row in rows[1:]] == [["'-1", "1", "'-1", "true"], ["'+1", "1", "'-1", "false"]]


def test_nicknames_with_commas_quotes_and_newlines_round_trip():
    names = ["Smith, Ann", 'Ann "the" Bold', "two\nlines", 'all, "of"\r\nthem', "semi;colon"]
    nicknames = {f"s{i}": name for i, name in enumerate(names)}
    asked = [Asked('Say "hi", please', "", {seat: name for seat, name in nicknames.items()})]
    rows = rows_of(results_csv(nicknames, asked))
    assert sorted((row[1], row[2]) for row in rows[1:]) == sorted((name, name) for name in names)
    assert {row[0] for row in rows[1:]} == {'Say "hi", please'}
