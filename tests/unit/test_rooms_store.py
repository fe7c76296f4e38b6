"""Both room stores behave alike: codes, the lecturer's key, the tally, the join cap, expiry.

The ``store`` and ``redis_url`` fixtures here are shared by the other test_rooms_* files.
"""

from __future__ import annotations

import csv
import io
import threading
import time

import pytest

from txviz.lecture.rooms import (
    MAX_JOINS,
    NotLecturer,
    RoomClosed,
    RoomFull,
    StoreDown,
    UnknownRoom,
    clean_code,
    clean_nickname,
)
from txviz.lecture.rooms.base import CODE_ALPHABET, CODE_LENGTH, FOLLOWING_S
from txviz.lecture.rooms.export import Asked, results_csv
from txviz.lecture.rooms.memory import MemoryStore
from txviz.lecture.rooms.qr import qr_png
from txviz.lecture.rooms.redis_server import installed, redis_server
from txviz.lecture.rooms.store import open_store

STEP = {"page": "pages/2_Attention_Explorer.py", "settings": {"layer": 3}, "title": "A head"}


@pytest.fixture(scope="module")
def redis_url():
    if not installed():
        pytest.skip("redis-server is missing: apt-get install -y redis-server (make redis)")
    with redis_server() as server:
        yield server.url


@pytest.fixture(params=["memory", "redis"])
def store(request):
    if request.param == "memory":
        return MemoryStore()
    return open_store(request.getfixturevalue("redis_url"))


def test_a_room_starts_at_its_first_step_with_a_short_unambiguous_code(store):
    code, token = store.create("Attention", "attention", STEP, total=12)
    assert len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET)
    assert not set(code) & set("0O1IL")
    assert len(token) >= 32
    state = store.state(code)
    assert (state.index, state.step, state.total, state.question, state.revealed) == (
        0,
        STEP,
        12,
        None,
        False,
    )
    assert store.state(f" {code[:3].lower()}-{code[3:]} ").code == code  # typed loosely, read right


@pytest.mark.parametrize("code", ["", "ABCDEF", "zzzzzz", "<b>x</b>", "A" * 10_000, None])
def test_an_unknown_or_malformed_code_is_an_unknown_room(store, code):
    store.create("Attention")
    with pytest.raises(UnknownRoom, match="No room has this code"):
        store.join(code, "Ann")
    with pytest.raises(UnknownRoom):
        store.state(code)


def test_only_the_lecturers_key_moves_asks_reveals_or_closes(store):
    code, token = store.create("Attention", step=STEP)
    other_code, other_token = store.create("Another")
    seat = store.join(code, "Ann")
    for forged in (
        None,
        "",
        seat,
        token[:-1] + ("A" if token[-1] != "A" else "B"),
        other_token,
        token.upper(),
    ):
        if forged == token:
            continue
        with pytest.raises(NotLecturer):
            store.set_step(code, forged, 1, {"page": "pages/1_Self_Attention.py", "settings": {}})
        with pytest.raises(NotLecturer):
            store.set_question(code, forged, {"id": "q"})
        with pytest.raises(NotLecturer):
            store.reveal(code, forged)
        with pytest.raises(NotLecturer):
            store.close(code, forged)
    state = store.state(code)
    assert (state.index, state.step, state.version, state.question) == (0, STEP, 1, None)
    moved = store.set_step(code, token, 1, {"page": "pages/1_Self_Attention.py", "settings": {}})
    assert (moved.index, moved.version) == (1, 2)
    store.close(code, token)
    with pytest.raises(RoomClosed, match="The lecturer closed this room"):
        store.state(code)
    assert store.state(other_code).title == "Another"


def test_the_tally_counts_each_seats_last_answer_once(store):
    code, token = store.create("Attention")
    seats = [store.join(code, f"s{i}") for i in range(5)]
    store.set_question(code, token, {"id": "q1", "prompt": "Which token?"})
    given = ["keys", "keys", "table", "keys", "cabinet"]
    assert [store.answer(code, seat, "q1", a) for seat, a in zip(seats, given, strict=True)] == [None] * 5
    assert store.answer(code, seats[0], "q1", "table") == "keys"  # a change of mind replaces the answer
    assert store.answer(code, seats[0], "q1", "table") == "table"  # sent twice, counted once
    assert store.tally(code, "q1") == {"table": 2, "keys": 2, "cabinet": 1}
    assert store.answers(code, "q1")[seats[0]] == "table"
    assert store.tally(code, "q2") == {}


def test_joining_again_with_ones_seat_keeps_it(store):
    code, _ = store.create("Attention")
    seat = store.join(code, "Ann")
    assert store.join(code, "Ann again", seat=seat) == seat
    assert store.join(code, "Bob", seat="forged") != "forged"
    assert len(store.nicknames(code)) == 2


def test_a_burst_of_joins_stops_at_the_cap_with_a_clear_message(store):
    code, _ = store.create("Attention")
    seats, refused = [], []

    def join(i: int) -> None:
        try:
            seats.append(store.join(code, f"student {i}"))
        except RoomFull as error:
            refused.append(str(error))

    threads = [threading.Thread(target=join, args=(i,)) for i in range(MAX_JOINS + 20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seats) == len(set(seats)) == MAX_JOINS == len(store.nicknames(code))
    assert len(refused) == 20 and "full" in refused[0]


def test_nicknames_are_cleaned_and_cut(store):
    code, _ = store.create("Attention")
    long_seat = store.join(code, "x" * 10_000)
    html_seat = store.join(code, "<b>Bold</b>\n\t<script>alert(1)</script>")
    names = store.nicknames(code)
    assert names[long_seat] == "x" * 24
    assert names[html_seat] == "<b>Bold</b> <script>aler"  # kept as text: drawn as text, never HTML
    assert clean_nickname("a\x00b\u202ec") == "abc"
    assert clean_code("ab0-de1") == "" and clean_code("ab cd-ef") == "ABCDEF"


def test_followers_are_the_students_who_polled_lately():
    now = [1000.0]
    store = MemoryStore(clock=lambda: now[0])
    code, _ = store.create("Attention")
    seats = [store.join(code) for _ in range(3)]
    for seat in seats[:2]:
        store.seen(code, seat)
    store.seen(code, "forged")
    assert store.followers(code) == 2
    now[0] += FOLLOWING_S + 1
    store.seen(code, seats[2])
    assert store.followers(code) == 1


def test_redis_followers_count_the_students_who_polled(redis_url):
    store = open_store(redis_url)
    code, _ = store.create("Attention")
    seats = [store.join(code) for _ in range(3)]
    for seat in seats:
        store.seen(code, seat)
    store.seen(code, "forged")
    assert store.followers(code) == 3


def test_an_idle_room_expires():
    now = [0.0]
    store = MemoryStore(idle_s=60, clock=lambda: now[0])
    code, token = store.create("Attention")
    now[0] = 59
    store.set_step(code, token, 1, STEP)  # the lecturer's change keeps it alive
    now[0] = 118
    assert store.state(code).index == 1
    now[0] = 200
    with pytest.raises(UnknownRoom):
        store.state(code)


def test_redis_keys_expire_when_the_room_idles(redis_url):
    from txviz.lecture.rooms.redis_store import RedisStore

    store = RedisStore(redis_url, idle_s=3)  # seconds: a stall on a busy machine stays inside them
    code, token = store.create("Attention")
    seat = store.join(code, "Ann")
    store.set_question(code, token, {"id": "q"})
    assert store.answer(code, seat, "q", "a") is None
    store.seen(code, seat)
    keys = store._keys(code)
    assert len(keys) == 4 and all(0 < store._redis.ttl(key) <= 3 for key in keys)
    time.sleep(3.6)
    with pytest.raises(UnknownRoom):
        store.state(code)
    assert not any(store._redis.exists(key) for key in keys)


def test_two_replicas_see_one_room_through_redis(redis_url):
    lecturer_side, student_side = open_store(redis_url), open_store(redis_url)
    code, token = lecturer_side.create("Attention", step=STEP)
    seat = student_side.join(code, "Ann")
    lecturer_side.set_step(code, token, 3, {"page": "pages/1_Self_Attention.py", "settings": {}})
    assert student_side.state(code).index == 3
    lecturer_side.set_question(code, token, {"id": "q"})
    assert student_side.answer(code, seat, "q", "keys") is None
    assert lecturer_side.tally(code, "q") == {"keys": 1}
    assert lecturer_side.answer_of(code, "q", seat) == "keys"


def test_a_stopped_redis_is_a_clear_message():
    from txviz.lecture.rooms.redis_server import free_port
    from txviz.lecture.rooms.redis_store import RedisStore

    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
    for call in (lambda: store.create("x"), lambda: store.state("ABCDEF"), lambda: store.join("ABCDEF")):
        with pytest.raises(StoreDown, match="not answering"):
            call()


def test_results_export_per_question_answers_counts_and_truth(store):
    code, _ = store.create("Attention")
    ann, bob, cy = store.join(code, "Ann"), store.join(code, "Bob"), store.join(code, "")
    answers = {ann: "keys", bob: "table", cy: "keys"}
    asked = [Asked("Which?", "keys", answers), Asked("How sure?", "", {bob: "0.4"})]
    rows = list(csv.DictReader(io.StringIO(results_csv(store.nicknames(code), asked))))
    assert [
        (r["question"], r["nickname"], r["answer"], r["count"], r["truth"], r["right"]) for r in rows
    ] == [
        ("Which?", "", "keys", "2", "keys", "true"),
        ("Which?", "Ann", "keys", "2", "keys", "true"),
        ("Which?", "Bob", "table", "1", "keys", "false"),
        ("How sure?", "Bob", "0.4", "1", "", ""),
    ]
    assert set(rows[0]) == {"question", "nickname", "answer", "count", "truth", "right"}  # no seats, no ids


def test_the_qr_code_is_a_png_of_the_join_url():
    import numpy as np
    import segno
    from PIL import Image

    url = "http://example.org/Lecture_Room?room=ABCDEF"
    image = np.array(Image.open(io.BytesIO(qr_png(url, scale=4))).convert("L"))
    symbol = segno.make(url, error="m")
    matrix = np.array([list(row) for row in symbol.matrix], dtype=bool)
    side = (matrix.shape[0] + 8) * 4  # the quiet zone of 4 modules on each side
    assert image.shape == (side, side)
    drawn = image[16:-16:4, 16:-16:4] < 128  # one pixel per module
    assert (drawn == matrix).all()
