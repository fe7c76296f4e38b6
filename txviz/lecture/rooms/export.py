"""A room's results as CSV: per question its answers, their counts and the truth; nicknames only.

Every cell is neutralised against formula injection (OWASP's CSV injection advice): a spreadsheet opening
the file shows a student's ``=HYPERLINK(...)`` as text instead of running it.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula


@dataclass(frozen=True)
class Asked:
    """One question's results: its prompt, the truth's label, and each seat's answer as a label."""

    prompt: str
    truth: str
    answers: dict[str, str]


def cell(value: Any) -> str:
    """A cell's text, with a leading ' where it would otherwise start a formula."""
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def results_csv(nicknames: dict[str, str], questions: list[Asked]) -> str:
    """One row per answer: question, nickname, answer, how many gave it, the truth, whether it is right."""
    table: list[list[Any]] = [["question", "nickname", "answer", "count", "truth", "right"]]
    for asked in questions:
        counts = Counter(asked.answers.values())
        rows = sorted(asked.answers.items(), key=lambda item: (nicknames.get(item[0], ""), item[1]))
        for seat, given in rows:
            right = str(given == asked.truth).lower() if asked.truth else ""
            table.append([asked.prompt, nicknames.get(seat, ""), given, counts[given], asked.truth, right])
    out = io.StringIO()
    csv.writer(out).writerows([cell(value) for value in row] for row in table)
    return out.getvalue()
