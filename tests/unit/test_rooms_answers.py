"""Answers mean what they say: a seat's last answer before the reveal counts, none lands after it."""

from __future__ import annotations

import random
import threading
import time

import pytest
import test_rooms_store

from txviz.lecture.rooms import AnswersClosed, NotSeated, RoomClosed, UnknownRoom
from txviz.lecture.rooms.redis_store import RedisStore

redis_url, store = test_rooms_store.redis_url, test_rooms_store.store  # fixtures: every test on both stores

QUESTION = {"id": "q1", "prompt": "Which token does the head attend to?"}


def asked(store):
    """A room with two seated students and QUESTION open."""
    code, token = store.create("Attention")
    ann, bob = store.join(code, "Ann"), store.join(code, "Bob")
    store.set_question(code, token, QUESTION)
    return code, token, ann, bob


def test_the_last_answer_before_the_reveal_is_the_one_counted(store):
    code, token, ann, bob = asked(store)
    assert store.answer_of(code, "q1", ann) is None
    assert store.answer(code, ann, "q1", "keys") is None
    assert store.answer(code, ann, "q1", "table") == "keys"
    assert store.answer(code, ann, "q1", "  cabinet  ") == "table"
    assert store.answer(code, bob, "q1", "keys") is None
    assert store.answer_of(code, "q1", ann) == "cabinet"  # what the student's screen grades
    store.reveal(code, token, "cabinet")
    assert store.answers(code, "q1") == {ann: "cabinet", bob: "keys"}
    assert store.tally(code, "q1") == {"cabinet": 1, "keys": 1}
    assert store.answer_of(code, "q1", ann) == "cabinet"
    assert store.answer_of(code, "q1", "never-joined") is None


def test_after_the_reveal_an_answer_is_refused_and_nothing_changes(store):
    code, token, ann, bob = asked(store)
    store.answer(code, ann, "q1", "keys")
    store.reveal(code, token, "table")
    for seat in (ann, bob):  # a change of mind and a first answer alike
        with pytest.raises(
            AnswersClosed, match="Answers are closed: the lecturer has revealed this question"
        ):
            store.answer(code, seat, "q1", "table")
    assert store.answers(code, "q1") == {ann: "keys"}


def test_an_answer_to_a_question_not_open_is_refused(store):
    code, token = store.create("Attention")
    seat = store.join(code, "Ann")
    with pytest.raises(AnswersClosed):  # nothing asked yet
        store.answer(code, seat, "q1", "keys")
    store.set_question(code, token, QUESTION)
    with pytest.raises(AnswersClosed):  # another question than the one asked
        store.answer(code, seat, "q2", "keys")
    store.set_question(code, token, {"id": "q2"})
    with pytest.raises(AnswersClosed, match="moved on"):  # the lecturer asked the next one
        store.answer(code, seat, "q1", "keys")
    assert store.answer(code, seat, "q2", "keys") is None
    store.set_step(code, token, 1, {"page": "pages/1_Self_Attention.py", "settings": {}})
    with pytest.raises(AnswersClosed, match="moved on"):  # the room moved to another step
        store.answer(code, seat, "q2", "table")
    store.set_question(code, token, {"id": "q3"})
    store.set_question(code, token, None)
    with pytest.raises(AnswersClosed):  # the question was taken back
        store.answer(code, seat, "q3", "keys")
    assert (store.answers(code, "q1"), store.answers(code, "q2"), store.answers(code, "q3")) == (
        {},
        {seat: "keys"},
        {},
    )


def test_asking_the_same_question_again_opens_it_again(store):
    code, token, ann, _ = asked(store)
    store.answer(code, ann, "q1", "keys")
    store.reveal(code, token, "keys")
    store.set_question(code, token, QUESTION)  # the lecturer asks it once more
    assert store.answer(code, ann, "q1", "table") == "keys"


def test_a_seat_that_never_joined_cannot_answer(store):
    code, _, _, _ = asked(store)
    other_code, _ = store.create("Another room")
    elsewhere = store.join(other_code, "Eve")
    for seat in ("", "forged", elsewhere):
        with pytest.raises(NotSeated, match="You are not seated in this room: join again with the code"):
            store.answer(code, seat, "q1", "keys")
    assert store.answers(code, "q1") == {}


def test_answers_to_a_closed_or_unknown_room_are_refused(store):
    code, token, ann, _ = asked(store)
    store.close(code, token)
    with pytest.raises(RoomClosed):
        store.answer(code, ann, "q1", "keys")
    with pytest.raises(RoomClosed):
        store.answer_of(code, "q1", ann)
    with pytest.raises(UnknownRoom):
        store.answer("ABCDEF", ann, "q1", "keys")


def test_a_student_who_leaves_stops_following_and_keeps_seat_and_answers(store):
    code, _, ann, bob = asked(store)
    store.answer(code, ann, "q1", "keys")
    store.seen(code, ann)
    store.seen(code, bob)
    assert store.followers(code) == 2
    store.leave(code, ann)
    store.leave(code, "forged")  # nobody to take away
    assert store.followers(code) == 1
    assert store.join(code, "Ann", seat=ann) == ann
    assert store.answer_of(code, "q1", ann) == "keys"
    assert store.answer(code, ann, "q1", "table") == "keys"
    store.seen(code, ann)  # back on the page: following again
    assert store.followers(code) == 2


def over_a_slow_network(store, delay_s: float = 0.02):
    """The students' side of ``store``: for Redis another client whose every command waits about ``delay_s``
    (at random, so students fall out of step) before it is sent, so a check and a write made in two round
    trips would straddle the reveal."""
    if not isinstance(store, RedisStore):
        return store  # one lock: nothing travels
    students = RedisStore(store.url)
    send = students._redis.execute_command

    def slowly(*args, **options):
        time.sleep(random.uniform(0.2, 1.8) * delay_s)
        return send(*args, **options)

    students._redis.execute_command = slowly
    return students


def test_no_answer_lands_after_the_reveal_even_racing_it(store):
    code, token = store.create("Attention")
    seats = [store.join(code, f"s{i}") for i in range(10)]
    store.set_question(code, token, QUESTION)
    students = over_a_slow_network(store)
    accepted: dict[str, list[str]] = {seat: [] for seat in seats}  # each seat's answers the store took
    refused_then_accepted: list[str] = []
    ended: dict[str, int] = {}

    def keep_answering(seat: str) -> None:
        refusals, n, deadline = 0, 0, time.monotonic() + 60
        while refusals < 10 and time.monotonic() < deadline:  # until refused for a while: the reveal is in
            n += 1
            try:
                students.answer(code, seat, "q1", f"{seat}-{n}")
            except AnswersClosed:
                refusals += 1
                continue
            if refusals:
                refused_then_accepted.append(seat)
            accepted[seat].append(f"{seat}-{n}")
        ended[seat] = refusals

    threads = [threading.Thread(target=keep_answering, args=(seat,)) for seat in seats]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while min(len(given) for given in accepted.values()) < 10 and time.monotonic() < deadline:
        time.sleep(0.001)  # every student is answering, again and again, when the reveal comes
    revealed = store.reveal(code, token, "keys")
    at_reveal = store.answers(code, "q1")  # read within a millisecond: before a late write would land
    for thread in threads:
        thread.join(timeout=60)
    assert revealed.revealed and not any(thread.is_alive() for thread in threads)
    assert ended == {seat: 10 for seat in seats}  # every student was still answering when it came
    assert store.answers(code, "q1") == at_reveal  # nothing landed after the reveal's state
    assert not refused_then_accepted
    # each seat counts the last answer the store told it it took
    assert at_reveal == {seat: accepted[seat][-1] for seat in seats}
