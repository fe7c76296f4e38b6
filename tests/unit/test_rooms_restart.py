"""Rooms outlive a Redis restart: the append-only file brings them back, and the store reconnects."""

from __future__ import annotations

import time

import pytest
import yaml

from txviz.core.paths import ROOT
from txviz.lecture.rooms import NotLecturer, StoreDown
from txviz.lecture.rooms.redis_server import installed, redis_server
from txviz.lecture.rooms.redis_store import RedisStore

needs_redis = pytest.mark.skipif(
    not installed(), reason="redis-server is missing: apt-get install -y redis-server (make redis)"
)
STEP = {"page": "pages/1_Self_Attention.py", "settings": {"layer": 2}, "title": "Step two"}


def lecture(store: RedisStore) -> tuple[str, str, dict[str, str]]:
    """A room moved to a step with a question asked and answered; returns (code, key, answers)."""
    code, token = store.create("Attention", "attention", total=5)
    store.set_step(code, token, 2, STEP)
    store.set_question(code, token, {"id": "q2", "prompt": "Which token?"})
    answers = {store.join(code, name): given for name, given in [("Ann", "keys"), ("Bob", "table")]}
    for seat, given in answers.items():
        store.answer(code, seat, "q2", given)
    return code, token, answers


@needs_redis
def test_a_room_survives_a_restart_and_calls_while_it_is_down_say_store_down(tmp_path):
    with redis_server(folder=tmp_path / "data") as server:
        store = RedisStore(server.url)
        code, token, answers = lecture(store)
        ticket = store.resume_ticket(code, token)
        before = store.state(code)
        seat = next(iter(answers))
        server.stop()
        down = {
            "create": lambda: store.create("x"),
            "state": lambda: store.state(code),
            "check": lambda: store.check(code, token),
            "join": lambda: store.join(code, "Cy"),
            "set_step": lambda: store.set_step(code, token, 3, STEP),
            "set_question": lambda: store.set_question(code, token, None),
            "reveal": lambda: store.reveal(code, token, "keys"),
            "answer": lambda: store.answer(code, seat, "q2", "table"),
            "answer_of": lambda: store.answer_of(code, "q2", seat),
            "answers": lambda: store.answers(code, "q2"),
            "tally": lambda: store.tally(code, "q2"),
            "nicknames": lambda: store.nicknames(code),
            "seen": lambda: store.seen(code, seat),
            "leave": lambda: store.leave(code, seat),
            "followers": lambda: store.followers(code),
            "close": lambda: store.close(code, token),
            "resume_ticket": lambda: store.resume_ticket(code, token),
            "redeem": lambda: store.redeem(code, ticket),
            "throttle": lambda: store.throttle("join:x", 20, 60.0),
            "announce": lambda: store.announce(code),
        }
        for name, call in down.items():
            try:
                call()
            except StoreDown as error:
                assert "not answering" in str(error), name
            else:
                pytest.fail(f"{name} worked with Redis down")
        time.sleep(0.5)
        server.start()  # the same port and folder
        assert store.state(code) == before  # the same store object: its pool made new connections
        assert (before.index, before.step, before.question["id"]) == (2, STEP, "q2")
        assert store.answers(code, "q2") == answers
        assert store.answer_of(code, "q2", seat) == answers[seat]
        assert store.answer(code, seat, "q2", "cabinet") == answers[seat]  # still open to answers
        assert store.redeem(code, ticket) == token
        with pytest.raises(NotLecturer):
            store.redeem(code, ticket)
        assert store.reveal(code, token, "cabinet").revealed
    assert list((tmp_path / "data").rglob("*.aof")), "the append-only file stays in the data folder"


@needs_redis
def test_restart_keeps_everything_and_a_new_server_on_the_folder_finds_the_rooms(tmp_path):
    with redis_server(folder=tmp_path / "data") as server:
        store = RedisStore(server.url)
        code, token, answers = lecture(store)
        state = store.state(code)
        server.restart(down_s=0.2)
        assert store.state(code) == state and store.answers(code, "q2") == answers
    with redis_server(folder=tmp_path / "data") as again:  # another port: the whole app restarted
        store = RedisStore(again.url)
        assert store.state(code) == state and store.answers(code, "q2") == answers
        store.check(code, token)


def test_the_deployed_redis_keeps_an_append_only_file_in_a_volume():
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    redis = compose["services"]["redis"]
    command = redis["command"]

    def option(name: str) -> str:
        return command[command.index(name) + 1]

    assert (option("--appendonly"), option("--appendfsync")) in {("yes", "everysec"), ("yes", "always")}
    volume, _, folder = redis["volumes"][0].partition(":")
    assert folder == option("--dir") and volume in compose["volumes"]
