"""Rooms in Redis, shared by every replica: a hash per room, its students, seen times and answers.

Keys (a room's expire IDLE_TTL_S after the lecturer's last change, and go at close):
  txviz:room:CODE            hash: state (JSON RoomState), token, asking (the id of the question open to
                             answers, absent when none: written with the state in one transaction),
                             ticket (SHA-256 of the lecturer's one resume ticket, absent when none)
  txviz:room:CODE:members    hash: seat -> nickname
  txviz:room:CODE:seen       sorted set: seat by the time it last polled
  txviz:room:CODE:answers:Q  hash: seat -> answer (the last one given while Q was open)
  txviz:room:CODE:closed     "1" for IDLE_TTL_S after the lecturer closed the room (RoomClosed)
  txviz:tries:BUCKET         tries in the bucket's current window, expiring when the window ends
And one channel per room, txviz:push:CODE: the lecturer's changes, heard by every replica's subscriber.
A student's write checks the room in the same script (EVALSHA), so none lands in a closed room, and no
answer lands once the lecturer's reveal (or a new step or question) has cleared ``asking``.
"""

from __future__ import annotations

import dataclasses
import functools
import secrets
import time
from collections.abc import Callable
from typing import Any

import redis

from txviz.lecture.rooms.base import (
    CLOSED,
    FOLLOWING_S,
    FULL,
    IDLE_TTL_S,
    MAX_JOINS,
    NOT_LECTURER,
    NOT_SEATED,
    TOO_MANY,
    UNKNOWN,
    NotLecturer,
    NotSeated,
    RoomClosed,
    RoomFull,
    RoomState,
    RoomStore,
    StoreDown,
    TooManyTries,
    UnknownRoom,
    answers_closed,
    clean_answer,
    clean_code,
    clean_nickname,
    new_code,
    new_state,
    new_token,
    open_question,
    same_ticket,
    same_token,
    ticket_hash,
)

PREFIX = "txviz:room:"
TRIES = "txviz:tries:"
PUSH = "txviz:push:"  # a room's channel: PUBLISH on a lecturer's change
# Each script starts with the room's fate: a student's write to a closed or unknown room changes nothing.
GONE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  if redis.call('EXISTS', KEYS[2]) == 1 then return {'closed'} end
  return {'unknown'}
end
"""
# A new room, unless its code is taken or was closed lately. KEYS: room, closed; ARGV: token, state, ttl.
CREATE_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'token', ARGV[1], 'state', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""
# A seat, the cap checked in the same step. KEYS: room, closed, members; ARGV: seat, new seat, nickname,
# cap, ttl.
JOIN_SCRIPT = (
    GONE
    + """
if ARGV[1] ~= '' and redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return {'seat', ARGV[1]} end
if redis.call('HLEN', KEYS[3]) >= tonumber(ARGV[4]) then return {'full'} end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return {'seat', ARGV[2]}
"""
)
# An answer to the open question only. KEYS: room, closed, members, answers; ARGV: seat, question, answer,
# ttl.
ANSWER_SCRIPT = (
    GONE
    + """
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then return {'unseated'} end
if redis.call('HGET', KEYS[1], 'asking') ~= ARGV[2] then return {'shut'} end
local replaced = redis.call('HGET', KEYS[4], ARGV[1])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[4], ARGV[4])
if replaced then return {'replaced', replaced} end
return {'first'}
"""
)
# A member's poll: only a joined seat is counted as following. KEYS: room, closed, members, seen;
# ARGV: seat, time, ttl.
SEEN_SCRIPT = (
    GONE
    + """
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
  redis.call('EXPIRE', KEYS[4], ARGV[3])
end
return {'ok'}
"""
)
# One try in a fixed window that starts at the bucket's first try. KEYS: bucket; ARGV: window ms.
THROTTLE_SCRIPT = """
local tries = redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return tries
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
        # a blocking pool: a burst of sessions waits for a connection instead of failing; a connection
        # that a restarted Redis dropped is found at checkout and made again
        pool = redis.BlockingConnectionPool.from_url(
            url,
            max_connections=64,
            timeout=30,
            socket_timeout=2,
            socket_connect_timeout=2,
            decode_responses=True,
        )
        self._redis = redis.Redis(connection_pool=pool)
        self._create = self._redis.register_script(CREATE_SCRIPT)
        self._join = self._redis.register_script(JOIN_SCRIPT)
        self._answer = self._redis.register_script(ANSWER_SCRIPT)
        self._seen = self._redis.register_script(SEEN_SCRIPT)
        self._throttle = self._redis.register_script(THROTTLE_SCRIPT)

    def _key(self, code: str, part: str = "") -> str:
        return f"{PREFIX}{clean_code(code) or '-'}{part}"

    def _gone(self, code: str) -> UnknownRoom:
        """Why the room is not there: RoomClosed while its closed marker lasts, else UnknownRoom."""
        if clean_code(code) and self._redis.exists(self._key(code, ":closed")):
            return RoomClosed(CLOSED)
        return UnknownRoom(UNKNOWN)

    def _script(self, script, code: str, parts: tuple[str, ...], args: list) -> list:
        """Run a script on the room's keys (the room and its closed marker first); RoomClosed or UnknownRoom
        when it found no room."""
        keys = [self._key(code), self._key(code, ":closed"), *(self._key(code, part) for part in parts)]
        reply = script(keys=keys, args=args)
        if reply[0] == "closed":
            raise RoomClosed(CLOSED)
        if reply[0] == "unknown":
            raise UnknownRoom(UNKNOWN)
        return reply

    def _room(self, code: str) -> dict:
        room = self._redis.hgetall(self._key(code))
        if "state" not in room:
            raise self._gone(code)
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
            raise NotLecturer(NOT_LECTURER)
        return room

    def _locked(self, code: str, work: Callable[[dict, Any], Any]) -> Any:
        """``work(room, pipe)`` on the room's hash as it is, its writes (after ``pipe.multi()``) applied only
        if the hash did not change meanwhile (else it runs again); RoomClosed / UnknownRoom without a room."""
        key = self._key(code)

        def apply(pipe) -> Any:
            room = pipe.hgetall(key)
            if "state" not in room:
                raise self._gone(code)
            return work(room, pipe)

        return self._redis.transaction(apply, key, value_from_callable=True)

    def _change(self, code: str, token: Any, update: Callable[[RoomState], dict]) -> RoomState:
        """Replace the fields ``update(state)`` gives, the version one higher, atomically against another
        change; ``asking`` follows the new state in the same transaction."""
        key = self._key(code)

        def write(room: dict, pipe) -> RoomState:
            if not same_token(token, room["token"]):
                raise NotLecturer(NOT_LECTURER)
            state = RoomState.from_json(room["state"])
            state = dataclasses.replace(state, version=state.version + 1, **update(state))
            asking = open_question(state)
            pipe.multi()
            pipe.hset(key, "state", state.to_json())
            if asking is None:
                pipe.hdel(key, "asking")
            else:
                pipe.hset(key, "asking", asking)
            return state

        state = self._locked(code, write)
        self._refresh(code)
        return state

    @_answering
    def create(self, title, lecture="", step=None, total=0):
        token = new_token()
        while True:
            code = new_code()
            state = new_state(code, title, lecture, step or {}, total)
            keys = [self._key(code), self._key(code, ":closed")]
            if self._create(keys=keys, args=[token, state.to_json(), self._idle_s]):
                return code, token

    @_answering
    def state(self, code):
        return RoomState.from_json(self._room(code)["state"])

    @_answering
    def check(self, code, token):
        self._lecturer(code, token)

    @_answering
    def join(self, code, nickname="", seat=""):
        args = [seat or "", secrets.token_urlsafe(9), clean_nickname(nickname), MAX_JOINS, self._idle_s]
        reply = self._script(self._join, code, (":members",), args)
        if reply[0] == "full":
            raise RoomFull(FULL)
        return reply[1]

    @_answering
    def set_step(self, code, token, index, step):
        changes = {"index": int(index), "step": dict(step), "question": None, "revealed": False}
        return self._change(code, token, lambda state: changes)

    @_answering
    def set_question(self, code, token, question):
        return self._change(code, token, lambda state: {"question": question, "revealed": False})

    @_answering
    def reveal(self, code, token, truth=""):
        def revealed(state: RoomState) -> dict:
            return {"question": dict(state.question or {}, truth=str(truth)), "revealed": True}

        return self._change(code, token, revealed)

    @_answering
    def answer(self, code, seat, question_id, answer):
        args = [seat, str(question_id), clean_answer(answer), self._idle_s]
        reply = self._script(self._answer, code, (":members", f":answers:{question_id}"), args)
        if reply[0] == "unseated":
            raise NotSeated(NOT_SEATED)
        if reply[0] == "shut":
            raise answers_closed(self.state(code), question_id)
        return reply[1] if reply[0] == "replaced" else None

    @_answering
    def answer_of(self, code, question_id, seat):
        with self._redis.pipeline(transaction=False) as pipe:
            pipe.exists(self._key(code))
            pipe.hget(self._key(code, f":answers:{question_id}"), seat)
            there, given = pipe.execute()
        if not there:
            raise self._gone(code)
        return given

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
        self._script(self._seen, code, (":members", ":seen"), [seat, time.time(), self._idle_s])

    @_answering
    def leave(self, code, seat):
        with self._redis.pipeline(transaction=False) as pipe:
            pipe.exists(self._key(code))
            pipe.zrem(self._key(code, ":seen"), seat)
            there, _ = pipe.execute()
        if not there:
            raise self._gone(code)

    @_answering
    def followers(self, code):
        self._room(code)
        return self._redis.zcount(self._key(code, ":seen"), time.time() - FOLLOWING_S, "+inf")

    @_answering
    def close(self, code, token):
        self._lecturer(code, token)
        with self._redis.pipeline() as pipe:  # MULTI: the room is gone and closed in one step
            pipe.set(self._key(code, ":closed"), "1", ex=self._idle_s)
            pipe.delete(self._key(code))
            pipe.execute()
        self._redis.delete(*self._keys(code))  # no student's write lands once the room's hash is gone

    @_answering
    def resume_ticket(self, code, token):
        ticket = secrets.token_urlsafe(24)

        def keep(room: dict, pipe) -> None:
            if not same_token(token, room["token"]):
                raise NotLecturer(NOT_LECTURER)
            pipe.multi()
            pipe.hset(self._key(code), "ticket", ticket_hash(ticket))

        self._locked(code, keep)
        self._refresh(code)
        return ticket

    @_answering
    def redeem(self, code, ticket):
        def spend(room: dict, pipe) -> str:
            if not same_ticket(ticket, room.get("ticket")):
                raise NotLecturer(NOT_LECTURER)
            pipe.multi()
            pipe.hdel(self._key(code), "ticket")
            return room["token"]

        token = self._locked(code, spend)  # a second redeem racing this one finds no ticket
        self._refresh(code)  # the lecturer is back: the room lives on, as after any change of theirs
        return token

    @_answering
    def throttle(self, bucket, limit, window_s, count=True):
        key = f"{TRIES}{bucket}"
        if count:
            tries = int(self._throttle(keys=[key], args=[max(1, int(window_s * 1000))]))
        else:
            tries = int(self._redis.get(key) or 0) + 1
        if tries > limit:
            raise TooManyTries(TOO_MANY)

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
