"""The Lecture Room in AppTest: a lecturer starts a room from a console that keeps its key out of every
address and link, a projector window and students follow, answers count as an audience-response system
counts them (the last before the reveal, nothing after), reloads keep each browser's part, and copied
links, forged keys and guessed codes drive nothing.

Each AppTest is a browser tab; tabs of one browser share its cookies. A browser is told apart by the host
of its address (``st.context.url``), and its cookie jar is what the app asked it to keep.
"""

from __future__ import annotations

import json
import threading
from urllib.parse import parse_qs, urlparse

import pytest
import streamlit as st
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz.app.lecture import room, room_cookies, room_page, warmup
from txviz.app.lecture.room_lectures import lectures
from txviz.lecture.rooms import MAX_JOINS, RoomFull
from txviz.lecture.rooms.base import JOIN_TRIES
from txviz.lecture.steps import Step

ROOM_PAGE = "pages/21_Lecture_Room.py"  # the console's script, as AppTest opens it
LECTURE = lectures()["1_attention_and_transformers"]  # step 1 asks a choice, step 2 asks nothing
STEPS = LECTURE.steps
N = len(STEPS)
QID = f"{LECTURE.name}-1"
ASK = f"_room_q_{QID}"
JARS: dict[str, dict[str, str]] = {}  # browser -> its cookies
WARMED: list[list[Step]] = []  # the steps each warm-up was asked to compute


def browser_of(url: str | None) -> str:
    return (urlparse(url or "").hostname or "").removesuffix(".test")


@pytest.fixture(autouse=True)
def browsers(monkeypatch):
    """Cookies kept per browser, as the app's scripts ask a real browser to keep them."""
    JARS.clear()
    WARMED.clear()
    monkeypatch.setattr(warmup, "warm", lambda steps, base=None: WARMED.append(steps))  # no server here

    def jar() -> dict[str, str]:
        return JARS.setdefault(browser_of(st.context.url), {})

    keep, forget = room_cookies.keep, room_cookies.forget

    def kept(name: str, value: str) -> None:
        keep(name, value)
        jar()[name] = value

    def forgot(name: str) -> None:
        forget(name)
        jar().pop(name, None)

    monkeypatch.setattr(room_cookies, "read", lambda name: jar().get(name, ""))
    monkeypatch.setattr(room, "client", lambda: browser_of(st.context.url))
    monkeypatch.setattr(room_cookies, "keep", kept)
    monkeypatch.setattr(room_cookies, "forget", forgot)
    return JARS


def session(browser: str = "lecturer", page: str = ROOM_PAGE, **params: str) -> AppTest:
    """A tab of ``browser`` opened on a page of the app (through app.py, so page switches work)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.context = {"url": f"http://{browser}.test/Lecture_Room"}
    at.query_params.update(params)
    return open_page(at, page)


def open_page(at: AppTest, script: str) -> AppTest:
    """Open a page as a click in the sidebar does; later runs stay where the last run ended, as a browser
    does after the app switched pages itself (AppTest would otherwise return to ``script`` every run)."""
    at.switch_page(script).run()
    at._page_hash = ""
    return at


def presenting(at: AppTest) -> bool:
    return "_presentation_on" in at.session_state and at.session_state["_presentation_on"] is True


def buttons(at: AppTest) -> set[str]:
    return {b.key for b in at.button}


def texts(at: AppTest) -> str:
    shown = [*at.main.markdown, *at.main.caption, *at.info, *at.warning, *at.error, *at.success]
    return " ".join(m.value for m in shown)


def everything_sent(at: AppTest) -> str:
    """Every text, code block, link and address the session's browser was sent."""
    links = [e.proto.url for e in at.get("link_button")]
    codes = [c.value for c in at.code]
    sidebar = [m.value for m in [*at.sidebar.markdown, *at.sidebar.caption]]
    return " ".join([texts(at), *codes, *links, *sidebar, json.dumps(at.query_params, default=str)])


def _param(at: AppTest, name: str) -> str:
    value = at.query_params[name]
    return value[0] if isinstance(value, list) else value


def key_of(code: str) -> str:
    return JARS["lecturer"][room_cookies.key_name(code)]


@pytest.fixture
def lecturer() -> AppTest:
    at = session()
    assert_clean(at)
    at.selectbox(key="room_lecture").set_value(LECTURE.title)
    at.button(key="room_start").click().run()
    assert_clean(at)
    return at


def projector_link(at: AppTest) -> str:
    (link,) = [e.proto.url for e in at.get("link_button") if "screen=projector" in e.proto.url]
    return link


def test_the_page_outside_a_room_offers_start_and_join_and_an_example():
    at = session()
    assert_clean(at)
    assert {"room_start", "room_join"} <= buttons(at)
    assert at.selectbox(key="room_lecture").options[-1].startswith("No lecture")
    assert len(at.get("plotly_chart")) == 1


def test_a_lecturer_starts_a_console_whose_key_is_in_no_address_link_or_text(lecturer):
    code = _param(lecturer, "room")
    key = key_of(code)  # the lecturer's browser was asked to keep it, and only that browser
    assert len(code) == 6 and len(key) >= 32
    assert key not in everything_sent(lecturer)
    assert set(lecturer.query_params) == {"room", "room_lecture"}  # the code and the page's own setting
    assert not presenting(lecturer)  # the console is the lecturer's own screen
    assert len(lecturer.get("image")) == 1  # the QR code
    shown = texts(lecturer)
    assert "0 following" in shown and f"Now (1 of {N})" in shown and "Next (2 of" in shown
    assert STEPS[0].points[0] in shown  # talking points on the presenter's console
    link = projector_link(lecturer)
    assert parse_qs(urlparse(link).query) == {"room": [code], "screen": ["projector"], "present": ["true"]}
    script = lecturer.sidebar.get("html")
    assert any(
        room_cookies.key_name(code) in e.proto.body and e.proto.unsafe_allow_javascript for e in script
    )
    assert [[STEPS[0], STEPS[1]]] == WARMED  # this step and the next, ahead of the class


def test_next_on_the_console_moves_the_room_not_the_console_and_one_window_follows(lecturer):
    code = _param(lecturer, "room")
    lecturer.button(key="_room_next").click().run()
    assert_clean(lecturer)
    assert room.store().state(code).index == 1
    assert "room_close" in buttons(lecturer) and f"Now (2 of {N})" in texts(lecturer)  # still the console
    lecturer.button(key="room_go").click().run()  # one screen: present in this window
    assert_clean(lecturer)
    assert presenting(lecturer)
    assert lecturer.session_state["view"] == STEPS[1].settings["view"]
    assert "_room_next" in buttons(lecturer) and "room_close" not in buttons(lecturer)  # the room bar
    assert key_of(code) not in everything_sent(lecturer)


def test_the_console_draws_before_the_class_is_told(lecturer, monkeypatch):
    """Next and Reveal on the console: its own redraw first, then the push to the class (one process
    shares the CPU, and the person at the front should not wait behind thirty followers)."""
    order = []
    draw = room_page.presenter
    _told_by_timers()  # an earlier test's announcement, late on a busy machine, is not this test's
    monkeypatch.setattr(room_page, "presenter", lambda state: (draw(state), order.append("drawn")))
    monkeypatch.setattr(room.push, "announce", lambda code, store: order.append("told"))
    for button in ("_room_reveal", "_room_next"):
        lecturer.button(key=button).click().run()
        assert_clean(lecturer)
        _told_by_timers()  # the class is told from a timer, TELL_AFTER_S after the run
    assert order == ["drawn", "told", "drawn", "told"]


def _told_by_timers() -> None:
    """Wait for every announcement a console run put off (room.tell_class's timers) to be made."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.join(timeout=30)


def test_the_projector_window_follows_shows_the_code_and_never_drives(lecturer):
    code = _param(lecturer, "room")
    link = parse_qs(urlparse(projector_link(lecturer)).query)
    screen = session("lecturer", **{k: v[0] for k, v in link.items()})  # a second window, same browser
    assert_clean(screen)
    assert presenting(screen)
    assert f"code **{code}**" in " ".join(m.value for m in screen.main.markdown)
    assert not {"_room_next", "_room_previous", "_room_reveal", "room_close", f"{ASK}_lock"} & buttons(screen)
    assert room.store().nicknames(code) == {}  # no seat taken
    lecturer.button(key="_room_next").click().run()
    screen.run()
    assert_clean(screen)
    assert screen.session_state["view"] == STEPS[1].settings["view"]
    elsewhere = session("hall-pc", **{k: v[0] for k, v in link.items()})  # the link copied elsewhere
    assert not {"_room_next", "room_close"} & buttons(elsewhere)
    assert room.store().state(code).index == 1


def test_students_follow_wander_come_back_and_copied_links_never_drive(lecturer):
    code = _param(lecturer, "room")
    student = session("ann", room=code)
    assert_clean(student)
    assert student.session_state[room.AT] is not None  # followed to step 1 at once
    assert "Following the lecturer" in texts(student) and f"Step 1 of {N}" in texts(student)
    assert student.session_state["view"] == STEPS[0].settings["view"]
    assert not {"_room_next", "_room_previous", "_room_reveal"} & buttons(student)
    assert set(student.query_params) <= {"room", "view", *STEPS[0].settings}  # no seat in it
    assert "Start here" not in texts(student)  # the room's bar drives the screen, not the path strip

    lecturer.button(key="_room_next").click().run()
    student.run()
    assert_clean(student)
    assert student.session_state["view"] == STEPS[1].settings["view"] != STEPS[0].settings["view"]

    open_page(student, "pages/3_Positional_Encoding.py")  # wanders off
    assert "Exploring on your own" in texts(student) and "_room_back" in buttons(student)
    student.button(key="_room_back").click().run()
    assert "Following the lecturer" in texts(student)
    assert student.session_state["view"] == STEPS[1].settings["view"]

    key = key_of(code)
    for params in ({"room": code}, {"room": code, "key": key}, {"room": code, "key": "forged"}):
        other = session("bob", **params)  # the presenter's address, even with the key, in another browser
        assert_clean(other)
        assert not {"_room_next", "_room_previous", "room_close"} & buttons(other)
        assert "key" not in other.query_params  # dropped from the address on arrival
    assert len(room.store().nicknames(code)) == 2  # ann, and bob once for his three tabs
    assert room.store().state(code).index == 1


def test_answers_count_the_last_before_the_reveal_and_nothing_after(lecturer):
    code = _param(lecturer, "room")
    question = STEPS[0].question
    right, wrong = question.answer, (question.answer + 1) % len(question.options)
    ann, bob, late = session("ann", room=code), session("bob", room=code), session("cy", room=code)
    ann.radio(key=f"{ASK}_pick").set_value(wrong).run()
    ann.button(key=f"{ASK}_lock").click().run()
    assert_clean(ann)
    assert f"{ASK}_lock" not in buttons(ann)
    again = session("ann", room=code)  # a reload (or a second tab): the same seat, which may answer again
    assert f"The room has your answer: {question.options[wrong]}" in texts(again)
    again.radio(key=f"{ASK}_pick").set_value(right).run()
    again.button(key=f"{ASK}_lock").click().run()
    assert f"It replaces your earlier one ({question.options[wrong]})" in texts(again)
    ann.run()  # the first tab does not send its old answer again
    bob.radio(key=f"{ASK}_pick").set_value(wrong).run()
    bob.button(key=f"{ASK}_lock").click().run()
    assert sorted(room.store().answers(code, QID).values()) == sorted([str(right), str(wrong)])

    late.radio(key=f"{ASK}_pick").set_value(right).run()  # picked, not locked in before the reveal
    lecturer.run()
    assert "2 answers" in texts(lecturer)
    lecturer.button(key="_room_reveal").click().run()
    assert_clean(lecturer)
    assert room.store().state(code).question["truth"] == question.options[question.answer]
    assert len(lecturer.get("plotly_chart")) >= 1  # the tally beside the truth
    late.run()
    assert f"{ASK}_lock" not in buttons(late) and "Answers closed" in texts(late)
    assert len(room.store().answers(code, QID)) == 2
    assert any(m.value.startswith("Right.") for m in ann.run().success)  # graded: the answer counted
    assert any(m.value.startswith("Right.") for m in again.run().success)
    assert any(m.value.startswith("Not this time.") for m in bob.run().warning)


def test_reloads_keep_each_browsers_part_and_a_closed_room_says_so(lecturer):
    code = _param(lecturer, "room")
    student = session("ann", room=code)
    seat = student.session_state[room.SEAT]
    lecturer.button(key="_room_next").click().run()
    again = session("ann", room=code)  # a reload: a fresh session with the address and the cookies
    assert_clean(again)
    assert again.session_state[room.SEAT] == seat and f"Step 2 of {N}" in texts(again)
    assert len(room.store().nicknames(code)) == 1
    lecturer_again = session("lecturer", room=code)
    assert_clean(lecturer_again)
    assert "room_close" in buttons(lecturer_again)
    lecturer_again.button(key="room_close").click().run()
    assert_clean(lecturer_again)
    assert room_cookies.key_name(code) not in JARS["lecturer"]
    student.run()
    assert "closed this room" in texts(student) and "You have left the room" in texts(student)
    rejoin = session("ann", room=code)
    assert "closed this room" in texts(rejoin)


def test_a_resume_link_works_once_in_another_browser(lecturer):
    code = _param(lecturer, "room")
    lecturer.button(key="room_resume").click().run()
    (link,) = [c.value for c in lecturer.code if "resume=" in c.value]
    assert "Keep it private" in texts(lecturer)
    lecturer.run()
    assert not [c.value for c in lecturer.code if "resume=" in c.value]  # shown once
    query = {k: v[0] for k, v in parse_qs(urlparse(link).query).items()}
    laptop = session("spare-laptop", **query)
    assert_clean(laptop)
    assert "room_close" in buttons(laptop) and "resume" not in laptop.query_params
    replay = session("student-who-saw-it", **query)
    assert_clean(replay)
    assert "does not work" in texts(replay) and "room_close" not in buttons(replay)
    assert room.SEAT not in replay.session_state or not replay.session_state[room.SEAT]
    assert room.store().nicknames(code) == {}  # a failed key takes no seat


def test_bad_codes_nicknames_guessing_and_a_full_room(lecturer):
    code = _param(lecturer, "room")
    at = session("mallory")
    at.text_input(key="room_code_typed").input("ZZZZZZ")
    at.button(key="room_join").click().run()
    assert not at.exception and any("No room has this code" in e.value for e in at.error)
    at.text_input(key="room_code_typed").input(code.lower())
    at.text_input(key="room_nickname").input("<b>Bold</b>" + "x" * 13)  # the box holds 24
    at.button(key="room_join").click().run()
    assert not at.exception
    assert room.store().nicknames(code)[at.session_state[room.SEAT]] == "<b>Bold</b>" + "x" * 13
    lecturer.run()
    assert list(lecturer.dataframe[0].value["nickname"]) == ["<b>Bold</b>" + "x" * 13]  # a table of text
    for n in range(MAX_JOINS - 1):
        room.store().join(code, f"s{n}")
    with pytest.raises(RoomFull):
        room.store().join(code, "one too many")
    late = session("late")
    late.text_input(key="room_code_typed").input(code)
    late.button(key="room_join").click().run()
    assert any("full" in e.value for e in late.error)


def test_guessing_codes_is_stopped_before_a_real_code_is_found(lecturer):
    code = _param(lecturer, "room")
    guesser = session("guesser")
    for n in range(JOIN_TRIES[0]):
        guesser.text_input(key="room_code_typed").input(f"ZZZZ{n:02d}")
        guesser.button(key="room_join").click().run()
    guesser.text_input(key="room_code_typed").input(code)
    guesser.button(key="room_join").click().run()
    assert any("Too many tries" in e.value for e in guesser.error)
    assert room.store().nicknames(code) == {}


def test_no_key_seat_or_nickname_reaches_a_log_line(lecturer, caplog):
    caplog.set_level("DEBUG", logger="txviz")
    code = _param(lecturer, "room")
    key = key_of(code)
    ann = session("ann")
    ann.text_input(key="room_code_typed").input(code)
    ann.text_input(key="room_nickname").input("Annabel Lee")
    ann.button(key="room_join").click().run()
    session("lecturer", room=code)  # a reload with the key's cookie
    session("mallory", room=code, resume="forged-ticket")  # a refused resume link is logged
    forged = "forged-key-" + "x" * 30
    JARS["ann"][room_cookies.key_name(code)] = forged
    session("ann", room=code)  # a forged key cookie is logged and dropped
    lecturer.button(key="room_close").click().run()
    secrets = [key, "forged-ticket", forged, ann.session_state[room.SEAT], "Annabel"]
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("txviz"))
    assert code in logged and "resume link was refused" in logged  # the room is named, and what happened
    for secret in secrets:
        assert secret not in logged
