"""Figures of a question's reveal: the row or candidates that explain the truth, and a class's tally."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from txviz import page_map
from txviz.figures.axes import margin, ticks
from txviz.figures.counts import count_axis
from txviz.figures.text import plain
from txviz.lecture.files import Lecture
from txviz.lecture.questions import KINDS, TOKEN, Question, Truth

TRUTH_COLOUR = "#2ca02c"
OTHER_COLOUR = "#9aa5b1"
ANSWER_OUTLINE = "#d62728"


def bars(
    labels: Sequence[str],
    values: Sequence[float],
    title: str,
    x_title: str,
    truth: int | None = None,
    marked: int | None = None,
) -> go.Figure:
    """Horizontal bars, one per label (escaped): the truth's bar green, the reader's answer outlined."""
    rows = list(range(len(labels)))
    shown = [f"▶ {label}" if i == marked else label for i, label in enumerate(labels)]
    figure = go.Figure(
        go.Bar(
            x=np.asarray(values, dtype=float),
            y=rows,
            orientation="h",
            marker={
                "color": [TRUTH_COLOUR if i == truth else OTHER_COLOUR for i in rows],
                "line": {"color": ANSWER_OUTLINE, "width": [3 if i == marked else 0 for i in rows]},
            },
            hovertemplate="%{x:.3f}<extra></extra>",
        )
    )
    figure.update_layout(title=plain(title), height=max(260, 26 * len(rows) + 120), margin=margin())
    figure.update_xaxes(title=x_title)
    figure.update_yaxes(autorange="reversed", **ticks(shown))
    return figure


def truth_figure(question: Question, truth: Truth, answer=None) -> go.Figure | None:
    """The view that explains the truth: the head's row for the query token, or the likeliest next tokens."""
    if truth.row is not None:
        labels = [f"{i}: {t}" for i, t in enumerate(truth.tokens)]
        title = f"Layer {question.layer}, head {question.head}: the row of {truth.tokens[truth.query]!r}"
        clicked = question.answer_form.shape == TOKEN  # the answer and the truth are tokens of the row
        picked = answer if clicked and type(answer) is int else None
        best = truth.value if clicked else None
        return bars(labels, truth.row, title, "attention weight", best, picked)
    if truth.candidates is not None:
        tokens = list(truth.candidates.tokens)
        typed = str(answer).strip().lower() if isinstance(answer, str) else None
        picked = next((i for i, t in enumerate(tokens) if t.strip().lower() == typed), None)
        return bars(
            tokens, truth.candidates.model_probs, "The likeliest next tokens", "probability", 0, picked
        )
    return None


def tally_figure(counts: Mapping[str, int], truth_label: str | None = None) -> go.Figure:
    """How many gave each answer, the right one in green."""
    labels = list(counts)
    right = labels.index(truth_label) if truth_label in labels else None
    figure = bars(labels, list(counts.values()), f"Answers ({sum(counts.values())})", "answers", right)
    figure.update_xaxes(**count_axis(max(counts.values(), default=0)))  # whole answers: no 0.5 tick
    return figure.update_traces(hovertemplate="%{x} answers<extra></extra>")


def _marker(kind: str) -> str:
    """The outline's symbol for a question kind (its class says it; a step without a question, a circle)."""
    return KINDS[kind].marker if kind in KINDS else "circle"


def outline_figure(lecture: Lecture) -> go.Figure:
    """The lecture at a glance: each step's page along the lecture, its question's kind by marker."""
    kinds = [s.question.kind if s.question else "no question" for s in lecture.steps]
    pages = [page_map.page(s.page).title for s in lecture.steps]
    order = list(dict.fromkeys(pages))
    figure = go.Figure()
    for kind in dict.fromkeys(kinds):
        steps = [i for i, k in enumerate(kinds) if k == kind]
        figure.add_trace(
            go.Scatter(
                x=[i + 1 for i in steps],
                y=[order.index(pages[i]) for i in steps],
                mode="markers",
                name=kind.replace("_", " "),
                marker={"size": 14 if kind != "no question" else 9, "symbol": _marker(kind)},
                customdata=[plain(lecture.steps[i].title) for i in steps],
                hovertemplate="step %{x}: %{customdata}<extra></extra>",
            )
        )
    figure.update_layout(
        title=plain(f"{lecture.title}: {len(lecture.steps)} steps, the page each opens"),
        height=max(300, 34 * len(order) + 140),
        margin=margin(left=10),
        legend={"title": "question"},
    )
    figure.update_xaxes(title="step", dtick=1, range=[0.5, len(lecture.steps) + 0.5])
    figure.update_yaxes(autorange="reversed", **ticks(order))
    return figure
