"""Lesson presets: each opens its page with its settings applied, and says something to say."""

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz import page_map
from txviz.app.lecture.lessons import load_lessons

LESSONS = load_lessons()


def test_there_are_lessons_for_the_key_ideas():
    titles = {lesson.title for lesson in LESSONS}
    assert {"Why positions matter", "Causal masking", "Soft vs hard attention", "Coreference flips"} <= titles
    for lesson in LESSONS:
        assert page_map.page(lesson.steps[0].page).path.exists(), lesson.name
        assert len(lesson.steps[0].points) >= 3 and lesson.questions() == []


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_lesson_opens_its_page_with_its_settings(lesson):
    app = AppTest.from_file(str(page_map.page(lesson.steps[0].page).path), default_timeout=240)
    app.query_params.update(lesson.steps[0].query_params())
    app.run()
    assert_clean(app)
    for key, value in lesson.steps[0].settings.items():
        assert app.session_state[key] == value, key


def test_picking_a_lesson_in_the_sidebar_runs(monkeypatch):
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert app.sidebar.selectbox(key="lesson").options == [lesson.title for lesson in LESSONS]
    assert_clean(app)


def test_home_groups_a_card_per_page_as_the_sidebar_does():
    from txviz import page_map
    from txviz.app.lecture import path

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not app.exception
    subheaders = [s.value for s in app.subheader]
    assert subheaders[:2] == ["Start here", "Lessons"]
    assert subheaders[2 : 2 + len(page_map.SECTIONS)] == list(page_map.SECTIONS)
    labels = [link.proto.label for link in app.get("page_link")]
    steps = [f"{i}. {step.title}" for i, step in enumerate(path.STEPS, 1)]
    assert labels[: len(steps)] == steps  # the path first, in order
    assert labels[len(steps)].startswith("Course map:")  # then the course map, named with what it finds
    assert any("mixture of experts" in c.value and "il/elle" in c.value for c in app.caption)
    cards = labels[len(steps) + 1 :]
    expected = [page.title for page in page_map.PAGES]
    assert sorted(cards) == sorted(expected) and len(cards) == len(page_map.PAGES)  # in 3 columns
    research = page_map.in_section("Research tools")
    assert len([m for m in app.markdown if "badge[:material/science: Research tool]" in m.value]) == len(
        research
    )


def test_a_lesson_card_on_home_opens_the_lesson():
    lesson = next(lesson for lesson in LESSONS if lesson.steps[0].settings)
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240).run()
    app.button(key=f"open-{lesson.name}").click().run()
    assert_clean(app)
    for key, value in lesson.steps[0].settings.items():
        assert app.session_state[key] == value, key
    assert any(lesson.steps[0].points[0] in m.value for m in app.sidebar.markdown)
