"""Who gets into a room: a closed room says so, a resume ticket works once, guessing is rate limited."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest
import test_rooms_store

from txviz.lecture.rooms import (
    JOIN_TRIES,
    NotLecturer,
    RoomClosed,
    TooManyTries,
    UnknownRoom,
)
from txviz.lecture.rooms.base import CODE_ALPHABET, CODE_LENGTH
from txviz.lecture.rooms.memory import MemoryStore
from txviz.lecture.rooms.redis_store import RedisStore

redis_url, store = test_rooms_store.redis_url, test_rooms_store.store  # fixtures: every test on both stores
STEP = test_rooms_store.STEP


def test_a_closed_room_says_so_to_everyone_who_comes_back(store):
    code, token = store.create("Attention", step=STEP)
    seat = store.join(code, "Ann")
    store.set_question(code, token, {"id": "q"})
    store.close(code, token)
    calls = {
        "state": lambda: store.state(code),
        "join": lambda: store.join(code, "Bob"),
        "join again": lambda: store.join(code, "Ann", seat=seat),
        "answer": lambda: store.answer(code, seat, "q", "keys"),
        "answers": lambda: store.answers(code, "q"),
        "nicknames": lambda: store.nicknames(code),
        "seen": lambda: store.seen(code, seat),
        "leave": lambda: store.leave(code, seat),
        "followers": lambda: store.followers(code),
        "check": lambda: store.check(code, token),
        "set_step": lambda: store.set_step(code, token, 1, STEP),
        "close": lambda: store.close(code, token),
        "resume_ticket": lambda: store.resume_ticket(code, token),
        "redeem": lambda: store.redeem(code, "a-ticket"),
    }
    for name, call in calls.items():
        try:
            call()
        except RoomClosed as error:
            assert str(error) == "The lecturer closed this room.", name
        else:
            pytest.fail(f"{name} worked on a closed room")
    with pytest.raises(UnknownRoom):  # existing callers treat it as gone
        store.state(code)
    with pytest.raises(UnknownRoom) as unknown:
        store.state("ABCDEF")
    assert not isinstance(unknown.value, RoomClosed)  # a room never made is merely unknown


def test_the_closed_marker_lasts_as_long_as_an_idle_room_then_the_code_is_unknown():
    now = [0.0]
    store = MemoryStore(idle_s=60, clock=lambda: now[0])
    code, token = store.create("Attention")
    store.close(code, token)
    now[0] = 59
    with pytest.raises(RoomClosed):
        store.state(code)
    now[0] = 61
    with pytest.raises(UnknownRoom) as unknown:
        store.state(code)
    assert not isinstance(unknown.value, RoomClosed)


def test_redis_keeps_the_closed_marker_for_the_idle_time_and_nothing_else(redis_url):
    store = RedisStore(redis_url, idle_s=30)
    code, token = store.create("Attention")
    seat = store.join(code, "Ann")
    store.set_question(code, token, {"id": "q"})
    store.answer(code, seat, "q", "keys")
    store.seen(code, seat)
    store.close(code, token)
    assert list(store._redis.scan_iter(f"txviz:room:{code}*")) == [f"txviz:room:{code}:closed"]
    assert 0 < store._redis.ttl(f"txviz:room:{code}:closed") <= 30


def test_a_resume_ticket_gives_the_key_once(store):
    code, token = store.create("Attention")
    ticket = store.resume_ticket(code, token)
    assert len(ticket) >= 32 and ticket != token
    assert store.redeem(f" {code.lower()} ", ticket) == token
    with pytest.raises(NotLecturer):  # spent
        store.redeem(code, ticket)
    store.set_step(code, token, 1, STEP)  # the key itself still drives the room


def test_a_new_ticket_replaces_the_old_and_only_the_key_makes_one(store):
    code, token = store.create("Attention")
    seat = store.join(code, "Ann")
    old = store.resume_ticket(code, token)
    new = store.resume_ticket(code, token)
    assert new != old
    with pytest.raises(NotLecturer):
        store.redeem(code, old)
    for forged in (None, "", seat, token[:-1], "x" * 32):
        with pytest.raises(NotLecturer):
            store.resume_ticket(code, forged)
    assert store.redeem(code, new) == token


def test_a_wrong_ticket_or_another_rooms_ticket_is_refused_and_keeps_the_right_one(store):
    code, token = store.create("Attention")
    other_code, other_token = store.create("Another")
    ticket = store.resume_ticket(code, token)
    other_ticket = store.resume_ticket(other_code, other_token)
    for forged in (None, "", 42, token, ticket[:-1], ticket + "x", ticket.upper(), other_ticket):
        with pytest.raises(NotLecturer):
            store.redeem(code, forged)
    with pytest.raises(NotLecturer):  # no ticket out: nothing to match, not even ""
        store.redeem(other_code, ticket)
    assert store.redeem(code, ticket) == token
    assert store.redeem(other_code, other_ticket) == other_token


def test_the_store_keeps_only_the_tickets_hash(redis_url):
    store = RedisStore(redis_url)
    code, token = store.create("Attention")
    ticket = store.resume_ticket(code, token)
    kept = store._redis.hgetall(f"txviz:room:{code}")
    assert ticket not in str(kept) and kept["ticket"] == hashlib.sha256(ticket.encode()).hexdigest()
    memory = MemoryStore()
    code, token = memory.create("Attention")
    ticket = memory.resume_ticket(code, token)
    assert ticket not in repr(memory._rooms)


def test_a_redeemed_ticket_keeps_the_room_alive_as_a_lecturers_change_does():
    now = [0.0]
    memory = MemoryStore(idle_s=60, clock=lambda: now[0])
    code, token = memory.create("Attention")
    ticket = memory.resume_ticket(code, token)
    now[0] = 50
    memory.redeem(code, ticket)
    now[0] = 100
    assert memory.state(code).code == code


def test_a_redeemed_ticket_renews_the_redis_keys(redis_url):
    store = RedisStore(redis_url, idle_s=300)
    code, token = store.create("Attention")
    ticket = store.resume_ticket(code, token)
    store._redis.expire(f"txviz:room:{code}", 5)
    store.redeem(code, ticket)
    assert store._redis.ttl(f"txviz:room:{code}") > 5


def test_two_redeems_racing_give_the_key_once(store):
    code, token = store.create("Attention")
    ticket = store.resume_ticket(code, token)
    got, refused = [], []
    start = threading.Barrier(8)

    def redeem() -> None:
        start.wait(timeout=30)
        try:
            got.append(store.redeem(code, ticket))
        except NotLecturer:
            refused.append(1)

    threads = [threading.Thread(target=redeem) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert got == [token] and len(refused) == 7


def test_a_bucket_takes_its_limit_of_tries_per_window_then_refuses(store):
    limit, window_s = 5, 60.0
    for _ in range(limit):
        store.throttle("join:10.0.0.1", limit, window_s)
    with pytest.raises(TooManyTries, match="Too many tries: wait a minute, then try again."):
        store.throttle("join:10.0.0.1", limit, window_s)
    with pytest.raises(TooManyTries):
        store.throttle("join:10.0.0.1", limit, window_s, count=False)
    store.throttle("join:10.0.0.2", limit, window_s)  # another client, another bucket


def test_asking_without_counting_refuses_only_when_one_more_try_would_be_too_many(store):
    for _ in range(100):
        store.throttle("key:A", 3, 60.0, count=False)  # asking counts nothing
    for _ in range(2):
        store.throttle("key:A", 3, 60.0)
    store.throttle("key:A", 3, 60.0, count=False)  # a third try is still allowed
    store.throttle("key:A", 3, 60.0)
    with pytest.raises(TooManyTries):
        store.throttle("key:A", 3, 60.0, count=False)


def test_a_new_window_starts_the_count_again():
    now = [0.0]
    store = MemoryStore(clock=lambda: now[0])
    for _ in range(3):
        store.throttle("b", 3, 10.0)
    now[0] = 9.9
    with pytest.raises(TooManyTries):
        store.throttle("b", 3, 10.0)
    now[0] = 10.0  # the window that began at the first try is over
    for _ in range(3):
        store.throttle("b", 3, 10.0)


def test_redis_windows_end_on_time(redis_url):
    store = RedisStore(redis_url)
    store.throttle("short", 1, 1.0)  # a second's window: a stall on a busy machine stays inside it
    with pytest.raises(TooManyTries):
        store.throttle("short", 1, 1.0)
    assert 0 < store._redis.pttl("txviz:tries:short") <= 1000
    time.sleep(1.2)
    store.throttle("short", 1, 1.0)


def test_the_memory_buckets_of_ended_windows_are_swept():
    now = [0.0]
    store = MemoryStore(clock=lambda: now[0])
    for second in range(20_000):  # a client from a new address every tick, each window long over
        now[0] = float(second)
        store.throttle(f"join:{second}", *JOIN_TRIES)
    assert len(store._tries) <= 1024


def guess(store, client: str) -> tuple[int, int]:
    """1,000 wrong codes from one client, each try as the app makes it: asked before the look-up, counted
    when it fails. Returns (codes looked up, tries refused)."""
    looked_up = refused = 0
    limit, window_s = JOIN_TRIES
    for n in range(1000):
        code = "".join(CODE_ALPHABET[(n * 7 + i) % len(CODE_ALPHABET)] for i in range(CODE_LENGTH))
        try:
            store.throttle(f"join:{client}", limit, window_s, count=False)
        except TooManyTries:
            refused += 1
            continue
        looked_up += 1
        try:
            store.join(code, "guesser")
        except UnknownRoom:
            store.throttle(f"join:{client}", limit, window_s)
    return looked_up, refused


def test_a_thousand_wrong_codes_from_one_client_are_mostly_refused_and_change_no_room(store):
    rooms = [store.create(f"Room {i}", step=STEP) for i in range(3)]
    for code, token in rooms:
        store.join(code, "Ann")
        store.set_question(code, token, {"id": "q"})
    before = [(store.state(code), store.nicknames(code)) for code, _ in rooms]
    looked_up, refused = guess(store, "203.0.113.9")
    assert looked_up == JOIN_TRIES[0] and refused == 1000 - JOIN_TRIES[0]
    assert [(store.state(code), store.nicknames(code)) for code, _ in rooms] == before
    assert guess(store, "203.0.113.10")[0] == JOIN_TRIES[0]  # a student elsewhere still gets in
