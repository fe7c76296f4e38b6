"""Every shipped lecture: each step opens its page with its settings, cleanly; the Lectures page itself."""

from __future__ import annotations

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz import page_map
from txviz.lecture.files import shipped_lectures

LECTURES = shipped_lectures()
STEPS = [(lecture, i) for lecture in LECTURES.values() for i in range(len(lecture.steps))]


@pytest.mark.parametrize(("lecture", "index"), STEPS, ids=[f"{lec.name}-{i + 1}" for lec, i in STEPS])
def test_each_step_opens_its_page_with_its_settings(lecture, index):
    step = lecture.steps[index]
    app = AppTest.from_file(str(page_map.page(step.page).path), default_timeout=300)
    app.query_params.update(step.query_params())
    app.run()
    assert_clean(app, (lecture.name, step.title))
    for key, value in step.settings.items():  # a value the page refused would fall back to its default
        assert app.session_state[key] == value, (lecture.name, step.title, key)


@pytest.mark.parametrize("name", list(LECTURES))
def test_the_lectures_page_shows_each_lecture(name):
    app = AppTest.from_file(str(ROOT / "pages/20_Lectures.py"), default_timeout=120).run()
    app.selectbox(key="lecture").set_value(name).run()
    assert_clean(app, name)
    assert app.get("plotly_chart"), "the lecture's outline"
    (table,) = app.dataframe
    assert len(table.value) == len(LECTURES[name].steps)
    app.selectbox(key="tour_model").set_value("smollm2").run()
    assert_clean(app, name)
