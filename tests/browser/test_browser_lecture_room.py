"""A lecture room in Chromium: a lecturer and two students in separate browser contexts, on one server
and across two replicas behind HAProxy sharing Redis.

The lecturer starts a room, the students join by its link and follow by themselves, answer the first
question (the tally shows 2), see their own answer marked at reveal, follow "Next step", wander and come
back; a forged key drives nothing; reloads rejoin; a stopped replica or Redis loses nothing that matters.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import ARTIFACTS, screenshot, wait_for_app

from txviz.lecture.files import shipped_lectures
from txviz.rooms.redis_server import installed, redis_server
from txviz.serving.replicas import cluster

pytestmark = pytest.mark.browser

WAIT_MS = 120_000
LECTURE = shipped_lectures()["1_attention_and_transformers"]
QUESTION = LECTURE.steps[0].question  # step 1 asks a choice; step 2 is another view of the same page
N = len(LECTURE.steps)
STUDENT_BAR = ".st-key-room_student_bar"
LECTURER_BAR = ".st-key-room_lecturer_bar"
# The frontend's own failure: a delta it cannot place (it then drops its connection for good).
FRONTEND_FAILURES = ("Bad delta path",)
FAILED: dict = {}  # a page -> the frontend failures its console printed


def context_page(browser, base: str | None = None, replica: str | None = None):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(WAIT_MS)
    if replica:  # pin the session to one replica, as the balancer's cookie does
        context.add_cookies([{"name": "TXVIZ_REPLICA", "value": replica, "url": base}])
    page = context.new_page()
    failed = FAILED.setdefault(page, [])
    page.on(
        "console", lambda m: failed.append(m.text) if any(f in m.text for f in FRONTEND_FAILURES) else None
    )
    return context, page


def start_room(page, base: str) -> str:
    page.goto(f"{base}/Lecture_Room")
    wait_for_app(page, WAIT_MS)
    page.get_by_role("button", name="Start a room").click()
    page.wait_for_selector('[data-testid="stImage"]')  # the QR code
    wait_for_app(page, WAIT_MS)
    code = parse_qs(urlparse(page.url).query)["room"][0]
    assert re.fullmatch(r"[A-Z2-9]{6}", code)
    return code


def bar_says(page, text: str, bar: str = STUDENT_BAR) -> None:
    page.locator(bar).filter(has_text=text).first.wait_for(timeout=WAIT_MS)


def join(page, base: str, code: str) -> None:
    page.goto(f"{base}/Lecture_Room?room={code}")
    page.wait_for_url(re.compile(r"/Self_Attention"), timeout=WAIT_MS)  # follows the lecturer at once
    bar_says(page, f"Step 1 of {N}")


def answer(page, option: str) -> None:
    bar = page.locator(STUDENT_BAR)
    bar.get_by_text(option, exact=True).click()
    bar.get_by_role("button", name="Lock in my answer").click()
    bar.get_by_text("Lock in my answer").wait_for(state="detached")


def test_a_lecturer_leads_two_students_on_one_server(app_server, _browser):
    base = app_server
    contexts = []
    try:
        (lc, lecturer), (ac, ann), (bc, bob), (fc, forger) = (context_page(_browser) for _ in range(4))
        contexts += [lc, ac, bc, fc]
        code = start_room(lecturer, base)
        assert "key=" not in lecturer.locator('[data-testid="stCode"]').first.inner_text()  # the join URL
        screenshot(lecturer, "room-projector")
        join(ann, base, code)
        join(bob, base, code)
        bar_says(lecturer, "2 following", LECTURER_BAR)

        right = QUESTION.options[QUESTION.answer]
        wrong = QUESTION.options[(QUESTION.answer + 1) % len(QUESTION.options)]
        answer(ann, right)
        answer(bob, wrong)
        bar_says(lecturer, "2 answers", LECTURER_BAR)
        lecturer.get_by_role("button", name="Reveal").click()
        lecturer.locator(f'{LECTURER_BAR} [data-testid="stPlotlyChart"]').first.wait_for()
        ann.get_by_text("Right.").first.wait_for(timeout=WAIT_MS)
        bob.get_by_text("Not this time.").first.wait_for(timeout=WAIT_MS)
        screenshot(lecturer, "room-projector-reveal")
        screenshot(ann, "room-student")

        lecturer.get_by_role("button", name="Next step").click()
        lecturer.wait_for_url(re.compile(r"/Self_Attention"), timeout=WAIT_MS)
        for student in (ann, bob):
            bar_says(student, f"Step 2 of {N}")

        ann.locator('[data-testid="stSidebarNav"] a', has_text="Positional Encoding").click()
        ann.wait_for_url(re.compile(r"/Positional_Encoding"), timeout=WAIT_MS)
        bar_says(ann, "Exploring on your own")
        ann.get_by_role("button", name="Back to the lecturer").click()
        ann.wait_for_url(re.compile(r"/Self_Attention"), timeout=WAIT_MS)
        bar_says(ann, "Following the lecturer")

        forger.goto(f"{base}/Self_Attention?room={code}&key=forged-key")
        wait_for_app(forger, WAIT_MS)
        forger.get_by_text("not the room's").first.wait_for()
        assert forger.get_by_role("button", name="Next step").count() == 0
        bar_says(forger, f"Step 2 of {N}")

        bob.reload()
        bar_says(bob, f"Step 2 of {N}")
        lecturer.reload()
        wait_for_app(lecturer, WAIT_MS)
        lecturer.get_by_role("button", name="Next step").wait_for()
        bar_says(lecturer, f"Step 2 of {N}", LECTURER_BAR)
        for page in (lecturer, ann, bob, forger):
            assert page.locator('[data-testid="stException"]').count() == 0
            assert FAILED[page] == []
    except Exception:
        for i, context in enumerate(contexts):  # what each browser showed, for the failure's reader
            screenshot(context.pages[0], f"room-failed-{i}")
        raise
    finally:
        for context in contexts:
            context.close()


def test_bad_codes_get_a_clear_message(app_server, browser_page):
    browser_page.goto(f"{app_server}/Lecture_Room")
    wait_for_app(browser_page, WAIT_MS)
    browser_page.get_by_label("Join code").fill("ZZZZZZ")
    browser_page.get_by_label("Nickname (optional)").fill("<b>x</b>" * 2000)  # the box keeps 24 characters
    browser_page.get_by_role("button", name="Join").click()
    browser_page.get_by_text("No room has this code").first.wait_for(timeout=WAIT_MS)
    assert browser_page.locator("b", has_text="x").count() == 0  # never drawn as HTML


@pytest.mark.skipif(not installed(), reason="redis-server is missing: apt-get install -y redis-server")
def test_a_room_spans_two_replicas_through_redis(_browser, monkeypatch):
    """The replicas' followers poll once in ten minutes here: what moves the student is the push alone
    (the lecturer's replica publishes on Redis, the student's replica reruns the student's bar)."""
    monkeypatch.setenv("TXVIZ_ROOM_POLL_S", "600")
    contexts = []
    with (
        redis_server() as redis,
        cluster(2, log_folder=ARTIFACTS / "room-replicas", redis_url=redis.url) as running,
    ):
        try:
            (lc, lecturer), (sc, student) = (
                context_page(_browser, running.url, "replica1"),
                context_page(_browser, running.url, "replica2"),
            )
            contexts += [lc, sc]
            code = start_room(lecturer, running.url)
            join(student, running.url, code)
            lecturer.get_by_role("button", name="Next step").click()
            bar_says(student, f"Step 2 of {N}")

            running.stop_replica("replica2")  # the student's replica goes; the room is in Redis
            sc.clear_cookies()
            student.goto(student.url)  # a reload through the balancer lands on replica1
            bar_says(student, f"Step 2 of {N}")
            assert {c["value"] for c in sc.cookies() if c["name"] == "TXVIZ_REPLICA"} == {"replica1"}

            lecturer.get_by_role("button", name="Next step").click()  # the student's new replica hears it
            bar_says(student, f"Step 3 of {N}")

            redis.stop()
            lecturer.get_by_text("is not answering").first.wait_for(timeout=WAIT_MS)
            student.reload()  # no poll to bring the news: a reload meets the message
            student.get_by_text("is not answering").first.wait_for(timeout=WAIT_MS)
            for page in (lecturer, student):
                assert page.locator('[data-testid="stException"]').count() == 0
                assert FAILED[page] == []
        finally:
            for context in contexts:
                context.close()
