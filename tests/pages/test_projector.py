"""Projector mode and the sidebar: presentation stays on across pages, lessons and links; Back and Next on
the "Start here" path's pages only; device and precision under "Advanced"."""

import json

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz import page_map
from txviz.app.lecture import path
from txviz.app.lecture.lessons import load_lessons

APP = str(ROOT / "app.py")
ON_PATH = "pages/3_Positional_Encoding.py"  # on the path, and quick to draw
OFF_PATH = "pages/4_Tokenization.py"


def presenting_home() -> AppTest:
    """Home with presentation mode switched on in the sidebar."""
    at = AppTest.from_file(APP, default_timeout=180).run()
    at.toggle(key="presentation").set_value(True).run()
    assert_clean(at)
    assert at.query_params["present"] == "true"  # a copied link opens in projector mode too
    return at


def test_presentation_stays_on_after_switching_page():
    at = presenting_home()
    at.switch_page(ON_PATH).run()
    assert_clean(at)
    assert at.toggle(key="presentation").value is True
    assert [b.label for b in at.button] == ["Leave projector"]


def test_presentation_stays_on_after_opening_a_lesson():
    lesson = next(lesson for lesson in (lesson.steps[0] for lesson in load_lessons()) if lesson.settings)
    at = presenting_home()
    at.selectbox(key="lesson").select(lesson.title).run()
    assert_clean(at)
    assert at.toggle(key="presentation").value is True
    assert at.session_state["text"] == lesson.settings["text"]  # the lesson's page, with its settings


def test_a_link_with_present_opens_in_projector_mode_and_leaving_turns_it_off():
    at = AppTest.from_file(str(ROOT / ON_PATH), default_timeout=180)
    at.query_params["present"] = "true"
    at.run()
    assert_clean(at)
    assert at.toggle(key="presentation").value is True
    at.button(key="_leave_projector").click().run()
    assert_clean(at)
    assert at.toggle(key="presentation").value is False
    assert "present" not in at.query_params and not at.button


def links(at: AppTest) -> list[tuple[str, str, str]]:
    """Every page link in the page: (label, page, query string)."""
    return [(link.proto.label, link.proto.page, link.proto.query_string) for link in at.get("page_link")]


def show_back_and_next(url_name: str) -> None:
    from txviz.app.lecture import path

    path.back_and_next(url_name)


def test_back_and_next_on_the_path_pages_only():
    on_path = [step.page for step in path.STEPS]
    for name in page_map.BY_NAME:
        at = AppTest.from_function(show_back_and_next, args=(name,)).run()
        assert not at.exception, name
        labels = [label for label, _, _ in links(at)]
        if name not in on_path:
            assert labels == [], name
            continue
        i = on_path.index(name)
        assert labels[0] == (f"Back: {path.STEPS[i - 1].title}" if i else "Back: Home"), name
        assert labels[1] == (f"Next: {path.STEPS[i + 1].title}" if i + 1 < len(on_path) else "Done: Home")


def test_setup_page_draws_back_and_next_on_a_path_page_and_not_elsewhere():
    at = AppTest.from_file(str(ROOT / ON_PATH), default_timeout=180).run()
    assert_clean(at)
    (back, _, query), (forward, page, _) = links(at)
    assert (back, forward, page) == ("Back: Token focus", "Next: Masking", "Masking_Patterns")
    assert query == "view=" + json.dumps("Token focus").replace('"', "%22").replace(" ", "+")
    at = AppTest.from_file(str(ROOT / OFF_PATH), default_timeout=180).run()
    assert_clean(at)
    assert links(at) == []


def test_device_and_precision_sit_under_advanced():
    at = AppTest.from_file(APP, default_timeout=180).run()
    (advanced,) = [e for e in at.sidebar.expander if e.label == "Advanced"]
    assert advanced.selectbox(key="device").value == "auto"
    assert advanced.selectbox(key="precision").value == "float32"
