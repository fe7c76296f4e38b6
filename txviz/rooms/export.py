"""A room's results as CSV: per question its answers, their counts and the truth; nicknames only."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Asked:
    """One question's results: its prompt, the truth's label, and each seat's answer as a label."""

    prompt: str
    truth: str
    answers: dict[str, str]


def results_csv(nicknames: dict[str, str], questions: list[Asked]) -> str:
    """One row per answer: question, nickname, answer, how many gave it, the truth, whether it is right."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question", "nickname", "answer", "count", "truth", "right"])
    for asked in questions:
        counts = Counter(asked.answers.values())
        rows = sorted(asked.answers.items(), key=lambda item: (nicknames.get(item[0], ""), item[1]))
        for seat, given in rows:
            right = str(given == asked.truth).lower() if asked.truth else ""
            writer.writerow([asked.prompt, nicknames.get(seat, ""), given, counts[given], asked.truth, right])
    return out.getvalue()
