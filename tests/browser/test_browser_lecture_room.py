"""A lecture room in Chromium: a lecturer's presenter console, the projector window and two students in
separate browsers, on one server and across two replicas behind HAProxy sharing Redis.

The lecturer starts a room and opens the projector window from the console; students join by the link
and follow by themselves, answer the first question (the tally shows 2), see their own answer marked at
reveal, follow "Next step", wander and come back. The key is in no address and no other browser's page;
copied links drive nothing; reloads and second tabs keep each browser's part; a stopped replica or Redis
loses nothing that matters.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import ARTIFACTS, screenshot, wait_for_app

from txviz.lecture.files import shipped_lectures
from txviz.lecture.rooms.redis_server import installed, redis_server
from txviz.lecture.rooms.store import open_store
from txviz.serving.replicas import cluster

pytestmark = pytest.mark.browser

WAIT_MS = 120_000
LECTURE = shipped_lectures()["1_attention_and_transformers"]
QUESTION = LECTURE.steps[0].question  # step 1 asks a choice; step 2 is another view of the same page
N = len(LECTURE.steps)
STUDENT_BAR = ".st-key-room_student_bar"
LECTURER_BAR = ".st-key-room_lecturer_bar"
PRESENTER = ".st-key-room_presenter"
PROJECTOR_BAR = ".st-key-room_projector_bar"
HALL = {"width": 1280, "height": 720}  # a projector's, and the README's screenshots
# The frontend's own failure: a delta it cannot place (it then drops its connection for good).
FRONTEND_FAILURES = ("Bad delta path",)
FAILED: dict = {}  # a page -> the frontend failures its console printed


def context_page(browser, base: str | None = None, replica: str | None = None, viewport=None):
    """A browser of its own (its own cookies), with one tab."""
    context = browser.new_context(viewport=viewport or {"width": 1400, "height": 1000})
    context.set_default_timeout(WAIT_MS)
    if replica:  # pin the session to one replica, as the balancer's cookie does
        context.add_cookies([{"name": "TXVIZ_REPLICA", "value": replica, "url": base}])
    return context, tab(context)


def tab(context):
    """One more tab of a browser, whose frontend failures are kept."""
    page = context.new_page()
    failed = FAILED.setdefault(page, [])
    page.on(
        "console", lambda m: failed.append(m.text) if any(f in m.text for f in FRONTEND_FAILURES) else None
    )
    return page


def room_key(context, code: str) -> str:
    """The lecturer's key as the lecturer's browser keeps it (a cookie of the site)."""
    (key,) = [c["value"] for c in context.cookies() if c["name"] == f"txviz_key_{code}"]
    return key


def start_room(page, base: str) -> str:
    page.goto(f"{base}/Lecture_Room")
    wait_for_app(page, WAIT_MS)
    page.get_by_role("button", name="Start a room").click()
    page.wait_for_selector('[data-testid="stImage"]')  # the QR code
    wait_for_app(page, WAIT_MS)
    code = parse_qs(urlparse(page.url).query)["room"][0]
    assert re.fullmatch(r"[A-Z2-9]{6}", code)
    assert set(parse_qs(urlparse(page.url).query)) <= {"room", "room_lecture"}  # no key in the address
    return code


def open_projector(context, console):
    """The projector window: the console's link, opened in another window of the lecturer's browser."""
    href = console.get_by_role("link", name="Open the projector window").get_attribute("href")
    assert "key" not in href and "screen=projector" in href
    projector = tab(context)
    projector.set_viewport_size(HALL)
    projector.goto(href)
    return projector


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
        (lc, lecturer), (ac, ann), (bc, bob), (fc, forger) = (
            context_page(_browser, viewport=HALL if i == 0 else None) for i in range(4)
        )
        contexts += [lc, ac, bc, fc]
        code = start_room(lecturer, base)
        key = room_key(lc, code)
        projector = open_projector(lc, lecturer)
        bar_says(projector, f"Step 1 of {N}", PROJECTOR_BAR)
        join(ann, base, code)
        join(bob, base, code)
        bar_says(lecturer, "2 following", PRESENTER)
        screenshot(lecturer, "room-presenter", full_page=False)  # the README's: 1280 x 720, as seen

        right = QUESTION.options[QUESTION.answer]
        wrong = QUESTION.options[(QUESTION.answer + 1) % len(QUESTION.options)]
        answer(ann, wrong)
        second = tab(ac)  # a second tab of Ann's browser: her seat, and her answer may change
        join(second, base, code)
        answer(second, right)
        second.get_by_text("It replaces your earlier one").first.wait_for()
        answer(bob, wrong)
        bar_says(lecturer, "2 answers", PRESENTER)
        lecturer.get_by_role("button", name="Reveal").click()
        lecturer.locator(f'{PRESENTER} [data-testid="stPlotlyChart"]').first.wait_for()
        projector.locator(f'{PROJECTOR_BAR} [data-testid="stPlotlyChart"]').first.wait_for()
        ann.get_by_text("Right.").first.wait_for(timeout=WAIT_MS)  # graded: the answer the room counted
        bob.get_by_text("Not this time.").first.wait_for(timeout=WAIT_MS)
        assert bob.get_by_role("button", name="Lock in my answer").count() == 0  # closed at the reveal
        screenshot(projector, "room-projector", full_page=False)
        screenshot(ann, "room-student")

        lecturer.get_by_role("button", name="Next step").click()
        bar_says(lecturer, f"Now (2 of {N})", PRESENTER)
        for student in (ann, bob):
            bar_says(student, f"Step 2 of {N}")
        bar_says(projector, f"Step 2 of {N}", PROJECTOR_BAR)
        assert urlparse(lecturer.url).path.endswith("/Lecture_Room")  # the console stays

        ann.locator('[data-testid="stSidebarNav"] a', has_text="Positional Encoding").click()
        ann.wait_for_url(re.compile(r"/Positional_Encoding"), timeout=WAIT_MS)
        bar_says(ann, "Exploring on your own")
        ann.get_by_role("button", name="Back to the lecturer").click()
        ann.wait_for_url(re.compile(r"/Self_Attention"), timeout=WAIT_MS)
        bar_says(ann, "Following the lecturer")

        for copied in (lecturer.url, projector.url, f"{base}/Lecture_Room?room={code}&key={key}"):
            forger.goto(copied)  # every address the room showed, even one with the key, in another browser
            wait_for_app(forger, WAIT_MS)
            assert forger.get_by_role("button", name="Next step").count() == 0
            assert forger.get_by_role("button", name="Close the room").count() == 0
        for page in (projector, ann, bob, forger):  # no other browser was sent the key
            assert key not in page.content() and key not in page.url

        bob.reload()
        bar_says(bob, f"Step 2 of {N}")
        lecturer.reload()
        wait_for_app(lecturer, WAIT_MS)
        bar_says(lecturer, "3 following", PRESENTER)  # Ann (two tabs), Bob (reloaded), the forger
        lecturer.get_by_role("button", name="Next step").wait_for()
        bar_says(lecturer, f"Now (2 of {N})", PRESENTER)
        for page in (lecturer, projector, ann, bob, forger):
            assert page.locator('[data-testid="stException"]').count() == 0
            assert FAILED[page] == []
    except Exception:
        for i, context in enumerate(contexts):  # what each browser showed, for the failure's reader
            for j, page in enumerate(context.pages):
                screenshot(page, f"room-failed-{i}-{j}")
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
def test_a_room_spans_two_replicas_and_survives_redis_and_a_replica_going_down(_browser, monkeypatch):
    """Faults, in order: Redis stops mid-lecture (everyone sees a notice, no traceback) and restarts (the
    room is at the same step with its answers: Redis keeps an append-only file); the replica of the
    presenter and of one student dies (the student's browser reconnects through HAProxy by itself and
    lands on the step; the presenter reloads and has control again, from its browser's key).

    The followers poll once in ten minutes here: what moves a student is the push alone (the lecturer's
    replica publishes on Redis, the student's replica reruns the student's bar)."""
    monkeypatch.setenv("TXVIZ_ROOM_POLL_S", "600")
    contexts = []
    with (
        redis_server() as redis,
        cluster(2, log_folder=ARTIFACTS / "room-replicas", redis_url=redis.url) as running,
    ):
        try:
            (lc, lecturer), (ac, ann), (bc, bob) = (
                context_page(_browser, running.url, replica)
                for replica in ("replica2", "replica2", "replica1")
            )
            contexts += [lc, ac, bc]
            code = start_room(lecturer, running.url)
            join(ann, running.url, code)
            join(bob, running.url, code)  # on the other replica: it hears the lecturer through Redis
            answer(ann, QUESTION.options[QUESTION.answer])
            bar_says(lecturer, "1 answers", PRESENTER)
            lecturer.get_by_role("button", name="Next step").click()
            for student in (ann, bob):
                bar_says(student, f"Step 2 of {N}")

            redis.stop()
            lecturer.get_by_text("is not answering").first.wait_for(timeout=WAIT_MS)  # the console's tally
            bob.reload()  # no poll to bring the news: a reload meets the message
            bob.get_by_text("is not answering").first.wait_for(timeout=WAIT_MS)
            redis.start()  # same port, same folder: its append-only file brings the room back
            bar_says(lecturer, f"Now (2 of {N})", PRESENTER)
            bob.reload()
            bar_says(bob, f"Step 2 of {N}")
            assert list(open_store(redis.url).answers(code, f"{LECTURE.name}-1").values()) == [
                str(QUESTION.answer)
            ]

            running.stop_replica("replica2")  # the presenter's and Ann's replica goes
            lecturer.reload()  # through the balancer to replica1, with the browser's key
            wait_for_app(lecturer, WAIT_MS)
            lecturer.get_by_role("button", name="Next step").click()
            for student in (ann, bob):  # Ann's browser reconnected by itself to replica1
                bar_says(student, f"Step 3 of {N}")
            assert {c["value"] for c in ac.cookies() if c["name"] == "TXVIZ_REPLICA"} == {"replica1"}
            for page in (lecturer, ann, bob):
                assert page.locator('[data-testid="stException"]').count() == 0
                assert FAILED[page] == []
        except Exception:
            for i, context in enumerate(contexts):
                screenshot(context.pages[0], f"room-replicas-failed-{i}")
            raise
        finally:
            for context in contexts:
                context.close()
