"""The soft-vs-hard lesson names the estimator its page trains hard attention with."""

from __future__ import annotations

from txviz.app.lecture.lessons import load_lessons
from txviz.softhard import toy


def test_lesson_says_hard_attention_trains_by_reinforce():
    lesson = next(
        lesson for lesson in (lesson.steps[0] for lesson in load_lessons()) if lesson.page == "Soft_vs_Hard"
    )
    point = next(p for p in lesson.points if "no gradient" in p)
    assert "reinforce" in toy.METHODS  # what the page's hard model is trained with
    assert "REINFORCE" in point and "log-probability of the sampled key" in point
    assert "non-differentiable choice instead" not in point
