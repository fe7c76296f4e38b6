"""Rooms in Redis, shared by every replica: a hash per room, its students, seen times and answers.

Keys (all expire IDLE_TTL_S after the lecturer's last change, and go at close):
  txviz:room:CODE            hash: state (JSON RoomState), token
  txviz:room:CODE:members    hash: seat -> nickname
  txviz:room:CODE:seen       sorted set: seat by the time it last polled
  txviz:room:CODE:answers:Q  hash: seat -> answer (HSETNX: a second answer is not counted)
And one channel per room, txviz:push:CODE: the lecturer's changes, heard by every replica's subscriber.
"""

from __future__ import annotations

import dataclasses
import functools
import secrets
import time
from typing import Any

import redis

from txviz.rooms.base import (
    FOLLOWING_S,
    IDLE_TTL_S,
    MAX_JOINS,
    NotLecturer,
    RoomFull,
    RoomState,
    RoomStore,
    StoreDown,
    UnknownRoom,
    clean_answer,
    clean_code,
    clean_nickname,
    new_code,
    new_state,
    new_token,
    same_token,
)

PREFIX = "txviz:room:"
PUSH = "txviz:push:"  # a room's channel: PUBLISH on a lecturer's change
# A member's poll in one round trip (EVALSHA): only a joined seat is counted as following.
SEEN_SCRIPT = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
end
return 0
"""


def _answering(method):
    """A Redis that does not answer becomes StoreDown, a message for the user, not a crash."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
            raise StoreDown(
                "The room server (Redis) is not answering, so the room cannot be read or changed. "
                "The pages still work; the room comes back when Redis does."
            ) from error

    return call


class RedisStore(RoomStore):
    """Rooms in the Redis at ``url``: every replica pointed at it sees the same rooms."""

    def __init__(self, url: str, idle_s: int = IDLE_TTL_S):
        self.url = url
        self._idle_s = int(idle_s)
        # a blocking pool: a burst of sessions waits for a connection instead of failing
        pool = redis.BlockingConnectionPool.from_url(
            url,
            max_connections=64,
            timeout=30,
            socket_timeout=2,
            socket_connect_timeout=2,
            decode_responses=True,
        )
        self._redis = redis.Redis(connection_pool=pool)
        self._seen = self._redis.register_script(SEEN_SCRIPT)

    def _key(self, code: str, part: str = "") -> str:
        return f"{PREFIX}{clean_code(code) or '-'}{part}"

    def _room(self, code: str) -> dict:
        room = self._redis.hgetall(self._key(code))
        if not room:
            raise UnknownRoom("No room has this code: it may have ended. Check the code on the projector.")
        return room

    def _keys(self, code: str) -> list[str]:
        base = self._key(code)
        return [base, f"{base}:members", f"{base}:seen", *self._redis.scan_iter(f"{base}:answers:*")]

    def _refresh(self, code: str) -> None:
        with self._redis.pipeline() as pipe:
            for key in self._keys(code):
                pipe.expire(key, self._idle_s)
            pipe.execute()

    def _lecturer(self, code: str, token: Any) -> dict:
        room = self._room(code)
        if not same_token(token, room["token"]):
            raise NotLecturer("Only the lecturer's link can change the room.")
        return room

    def _change(self, code: str, token: Any, **changes: Any) -> RoomState:
        """Replace fields of the state, its version one higher, atomically against another change."""
        key = self._key(code)
        self._lecturer(code, token)

        def apply(pipe) -> RoomState:
            stored = pipe.hget(key, "state")
            if stored is None:
                raise UnknownRoom("The room has ended.")
            state = RoomState.from_json(stored)
            state = dataclasses.replace(state, version=state.version + 1, **changes)
            pipe.multi()
            pipe.hset(key, "state", state.to_json())
            return state

        state = self._redis.transaction(apply, key, value_from_callable=True)
        self._refresh(code)
        return state

    @_answering
    def create(self, title, lecture="", step=None, total=0):
        token = new_token()
        while True:
            code = new_code()
            state = new_state(code, title, lecture, step or {}, total)
            if self._redis.hsetnx(self._key(code), "token", token):
                break
        with self._redis.pipeline() as pipe:
            pipe.hset(self._key(code), "state", state.to_json())
            pipe.expire(self._key(code), self._idle_s)
            pipe.execute()
        return code, token

    @_answering
    def state(self, code):
        return RoomState.from_json(self._room(code)["state"])

    @_answering
    def check(self, code, token):
        self._lecturer(code, token)

    @_answering
    def join(self, code, nickname="", seat=""):
        self._room(code)
        members = self._key(code, ":members")
        if seat and self._redis.hexists(members, seat):
            return seat
        seat = secrets.token_urlsafe(9)

        def add(pipe) -> None:
            if pipe.hlen(members) >= MAX_JOINS:
                raise RoomFull(
                    f"This room is full ({MAX_JOINS} students). Ask the lecturer to open a second room."
                )
            pipe.multi()
            pipe.hset(members, seat, clean_nickname(nickname))
            pipe.expire(members, self._idle_s)

        self._redis.transaction(add, members)  # a burst of joins cannot pass the cap together
        return seat

    @_answering
    def set_step(self, code, token, index, step):
        return self._change(code, token, index=int(index), step=dict(step), question=None, revealed=False)

    @_answering
    def set_question(self, code, token, question):
        return self._change(code, token, question=question, revealed=False)

    @_answering
    def reveal(self, code, token, truth=""):
        question = dict(self.state(code).question or {}, truth=str(truth))
        return self._change(code, token, question=question, revealed=True)

    @_answering
    def answer(self, code, seat, question_id, answer):
        self._room(code)
        if not self._redis.hexists(self._key(code, ":members"), seat):
            return False
        key = self._key(code, f":answers:{question_id}")
        with self._redis.pipeline() as pipe:
            pipe.hsetnx(key, seat, clean_answer(answer))
            pipe.expire(key, self._idle_s)
            added, _ = pipe.execute()
        return bool(added)

    @_answering
    def answers(self, code, question_id):
        self._room(code)
        return self._redis.hgetall(self._key(code, f":answers:{question_id}"))

    @_answering
    def nicknames(self, code):
        self._room(code)
        return self._redis.hgetall(self._key(code, ":members"))

    @_answering
    def seen(self, code, seat):
        members, key = self._key(code, ":members"), self._key(code, ":seen")
        self._seen(keys=[members, key], args=[seat, time.time(), self._idle_s])

    @_answering
    def followers(self, code):
        self._room(code)
        return self._redis.zcount(self._key(code, ":seen"), time.time() - FOLLOWING_S, "+inf")

    @_answering
    def close(self, code, token):
        self._lecturer(code, token)
        self._redis.delete(*self._keys(code))

    @_answering
    def announce(self, code):
        self._redis.publish(f"{PUSH}{code}", "1")
        return True

    def listen(self, on_change):
        """One subscriber thread for every room (a pattern): each message names the room that changed."""

        def heard(message) -> None:
            on_change(message["channel"].removeprefix(PUSH))

        def dropped(error, pubsub, thread) -> None:
            time.sleep(1.0)  # Redis away: try again in a second (redis-py resubscribes on reconnect)

        pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        pubsub.psubscribe(**{f"{PUSH}*": heard})
        return pubsub.run_in_thread(sleep_time=1.0, daemon=True, exception_handler=dropped)
