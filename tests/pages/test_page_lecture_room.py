"""The Lecture Room in AppTest: a lecturer starts a room and moves it, students follow, wander and come
back, answer a question (counted once), see their answer marked at reveal; forged keys drive nothing."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.app import room, warmup
from txviz.app.room_lectures import lectures, shared
from txviz.rooms import MAX_JOINS, RoomFull

ROOM_PAGE = "pages/21_Lecture_Room.py"
LECTURE = lectures()["1_attention_and_transformers"]  # step 1 asks a choice, step 2 asks nothing
STEPS = LECTURE.steps
N = len(STEPS)


def session(**params: str) -> AppTest:
    """A browser session on the Lecture Room page (through app.py, so page switches work)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.query_params.update(params)
    return open_page(at, ROOM_PAGE)


def open_page(at: AppTest, script: str) -> AppTest:
    """Open a page as a click in the sidebar does; later runs stay where the last run ended, as a browser
    does after the app switched pages itself (AppTest would otherwise return to ``script`` every run)."""
    at.switch_page(script).run()
    at._page_hash = ""
    return at


def buttons(at: AppTest) -> set[str]:
    return {b.key for b in at.button}


def texts(at: AppTest) -> str:
    return " ".join(m.value for m in [*at.main.markdown, *at.main.caption, *at.info, *at.warning, *at.error])


@pytest.fixture
def lecturer() -> AppTest:
    at = session()
    assert_clean(at)
    at.selectbox(key="room_lecture").set_value(LECTURE.title)
    at.button(key="room_start").click().run()
    assert_clean(at)
    return at


def test_the_page_outside_a_room_offers_start_and_join_and_an_example():
    at = session()
    assert_clean(at)
    assert {"room_start", "room_join"} <= buttons(at)
    assert at.selectbox(key="room_lecture").options[-1].startswith("No lecture")
    assert len(at.get("plotly_chart")) == 1


def test_a_lecturer_starts_a_room_on_the_projector_with_a_code_and_qr(lecturer):
    code, key = lecturer.query_params["room"], lecturer.query_params["key"]
    assert len(code[0] if isinstance(code, list) else code) == 6 and key
    assert lecturer.session_state["_presentation_on"] is True
    assert len(lecturer.get("image")) == 1  # the QR code
    shown = texts(lecturer)
    assert "0 following" in shown and f"Step 1 of {N}" in shown
    assert any("?room=" in c.value and "key" not in c.value for c in lecturer.main.code)  # the join URL
    first = json.dumps(shared(STEPS[0]), sort_keys=True)
    assert first not in warmup._WARMED  # an AppTest has no server to warm pages on: nothing is opened


def _param(at: AppTest, name: str) -> str:
    value = at.query_params[name]
    return value[0] if isinstance(value, list) else value


def test_students_follow_wander_come_back_and_a_forged_key_drives_nothing(lecturer):
    code = _param(lecturer, "room")
    student = session(room=code)
    assert_clean(student)
    assert student.session_state[room.AT] is not None  # followed to step 1 at once
    assert "Following the lecturer" in texts(student) and f"Step 1 of {N}" in texts(student)
    assert student.session_state["view"] == STEPS[0].values()["view"]
    assert not {"_room_next", "_room_previous", "_room_reveal"} & buttons(student)

    lecturer.button(key="_room_next").click().run()  # step 2: the same page, another view
    assert_clean(lecturer)
    assert room.store().state(code).index == 1
    student.run()
    assert_clean(student)
    assert student.session_state["view"] == STEPS[1].values()["view"] != STEPS[0].values()["view"]
    assert f"Step 2 of {N}" in texts(student)

    open_page(student, "pages/3_Positional_Encoding.py")  # wanders off
    assert_clean(student)
    assert "Exploring on your own" in texts(student) and "_room_back" in buttons(student)
    student.button(key="_room_back").click().run()
    assert_clean(student)
    assert "Following the lecturer" in texts(student)
    assert student.session_state["view"] == STEPS[1].values()["view"]

    forger = session(room=code, key="forged-" + _param(lecturer, "key")[7:])
    assert_clean(forger)
    assert "not the room's" in texts(forger)
    assert not {"_room_next", "_room_previous", "room_close"} & buttons(forger)
    assert room.store().state(code).index == 1


def test_a_question_is_answered_once_tallied_and_each_student_sees_their_answer_marked(lecturer):
    code = _param(lecturer, "room")
    question = STEPS[0].question
    qid = f"{LECTURE.name}-1"
    key = f"_room_q_{qid}"
    right, wrong = question.answer, (question.answer + 1) % len(question.options)
    students = [session(room=code), session(room=code)]
    for student, given in zip(students, [right, wrong], strict=True):
        student.radio(key=f"{key}_pick").set_value(given).run()
        student.button(key=f"{key}_lock").click().run()
        assert_clean(student)
        assert f"{key}_lock" not in buttons(student)  # locked: nothing to send twice
        student.run()
    assert room.store().answers(code, qid) and sorted(room.store().answers(code, qid).values()) == sorted(
        [str(right), str(wrong)]
    )
    lecturer.run()
    assert "2 answers" in texts(lecturer)
    lecturer.button(key="_room_reveal").click().run()
    assert_clean(lecturer)
    assert room.store().state(code).question["truth"] == question.options[question.answer]
    assert len(lecturer.get("plotly_chart")) >= 1  # the tally beside the truth
    shown_right, shown_wrong = (s.run() for s in students)
    assert any(m.value.startswith("Right.") for m in shown_right.success)
    assert any(m.value.startswith("Not this time.") for m in shown_wrong.warning)


def test_reloads_keep_the_room_for_students_and_control_for_the_lecturer(lecturer):
    code, key = _param(lecturer, "room"), _param(lecturer, "key")
    student = session(room=code)
    seat = _param(student, "seat")
    lecturer.button(key="_room_next").click().run()
    again = session(room=code, seat=seat)  # a reload: a fresh session with the address
    assert_clean(again)
    assert again.session_state[room.SEAT] == seat and f"Step 2 of {N}" in texts(again)
    assert len(room.store().nicknames(code)) == 1
    lecturer_again = session(room=code, key=key)
    assert_clean(lecturer_again)
    assert "room_close" in buttons(lecturer_again)
    lecturer_again.button(key="room_close").click().run()
    assert_clean(lecturer_again)
    student.run()
    assert "You have left the room" in texts(student)


def test_bad_codes_and_nicknames_and_a_full_room(lecturer):
    code = _param(lecturer, "room")
    at = session()
    at.text_input(key="room_code_typed").input("ZZZZZZ")
    at.button(key="room_join").click().run()
    assert not at.exception and any("No room has this code" in e.value for e in at.error)
    at.text_input(key="room_code_typed").input(code.lower())
    at.text_input(key="room_nickname").input(
        "<b>Bold</b>" + "x" * 13
    )  # the box holds 24; the store cuts longer
    at.button(key="room_join").click().run()
    assert not at.exception
    assert room.store().nicknames(code)[at.session_state[room.SEAT]] == "<b>Bold</b>" + "x" * 13
    lecturer.run()
    assert list(lecturer.dataframe[0].value["nickname"]) == ["<b>Bold</b>" + "x" * 13]  # a table of text
    for n in range(MAX_JOINS - 1):
        room.store().join(code, f"s{n}")
    with pytest.raises(RoomFull):
        room.store().join(code, "one too many")
    late = session()
    late.text_input(key="room_code_typed").input(code)
    late.button(key="room_join").click().run()
    assert any("full" in e.value for e in late.error)
