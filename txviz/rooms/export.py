"""A room's results as CSV: per question its answers, their counts and the truth; nicknames only."""

from __future__ import annotations

import csv
import io

from txviz.rooms.base import RoomStore


def results_csv(store: RoomStore, code: str, questions: list[dict], truths: dict[str, str]) -> str:
    """One row per answer (question, nickname, answer, count of that answer, truth, right)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question", "nickname", "answer", "count", "truth", "right"])
    names = store.nicknames(code)
    for question in questions:
        qid = str(question["id"])
        tally = store.tally(code, qid)
        truth = truths.get(qid, "")
        for seat, given in sorted(store.answers(code, qid).items(), key=lambda item: names.get(item[0], "")):
            right = "" if not truth else str(given == truth).lower()
            writer.writerow(
                [question.get("prompt", qid), names.get(seat, ""), given, tally[given], truth, right]
            )
    return out.getvalue()
