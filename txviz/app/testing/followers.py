"""A class of headless followers in one process: `python -m txviz.app.testing.followers BASE CODE N [COOKIE...]`.

Each follower is a `headless.Session` that joins the room at ``BASE/Lecture_Room?room=CODE`` (the app
then switches it to the lecturer's step), as a student's browser does. It writes one JSON line to stdout
whenever a follower's room bar says something new (``{"i", "bar", "t"}``, t on time.monotonic, which is
the whole machine's clock on Linux), and obeys lines on stdin: ``answer`` (follower i picks option
i mod n of the step's choice question and locks it in, again while its screen does not say the room has the answer, then
says ``{"i", "answered", "counted", "tries", "t"}``) and ``quit``; once, ``{"i", "stopped"}`` when a
browser would have stopped on what the follower was sent (an element it could not place). Followers N cycle through the
COOKIEs (a replica's sticky cookie, ``NAME=VALUE``), if given. `... visit BASE PAGE_SCRIPT QUERY` opens
one page once (a fresh visitor) and exits; `... idle BASE PAGE N` keeps N sessions on a page until a line
comes on stdin.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from txviz.app.lecture.headless import Session

BAR_MARKS = ("Following the lecturer", "Exploring on your own")  # the student bar's line
ANSWER = "Your answer"  # the choice question's radio
COUNTED = "The room has your answer"  # the student's own screen, once the room has counted the answer
COUNTED_S = 15.0  # how long a follower waits to see it before it clicks again, as a student would
TRIES = 3  # clicks before a follower says its answer was never confirmed
JOINING_AT_ONCE = 6  # a class walks in a few at a time


def say(**fields) -> None:
    print(json.dumps(fields), flush=True)


class Follower:
    """One student: a headless session and the last thing its room bar said."""

    def __init__(self, i: int, base: str, code: str, cookie: str):
        self.i, self.bar, self.stopped = i, "", False
        self.session = Session(base, "Lecture_Room", f"room={code}", cookie, on_text=self._text)

    def _text(self, body: str) -> None:
        if self.session.places.stopped and not self.stopped:
            self.stopped = True
            say(i=self.i, stopped=self.session.places.stopped, t=time.monotonic())
            print(f"follower {self.i} would have stopped a browser; its last messages:", *self.session.places.recent,
                  sep="\n  ", file=sys.stderr, flush=True)  # fmt: skip
        if body != self.bar and any(mark in body for mark in BAR_MARKS):
            self.bar = body
            say(i=self.i, bar=body, t=time.monotonic())

    async def answer(self) -> None:
        """Pick option i mod n of the choice question, then lock it in, as a student's clicks do (a rerun
        of the fragment that drew the question: a timer of the page before may still be running); again
        while the screen does not say the room has the answer, up to TRIES times."""
        for tries in range(1, TRIES + 1):
            fragment = self.session.fragment_of[ANSWER]
            options = self.session.options[ANSWER]
            await self.session.choose(ANSWER, options[self.i % len(options)], fragment)
            await self.session.finished()
            await self.session.click("Lock in my answer", fragment)
            await self.session.finished()
            try:
                await self.session.wait_for(lambda text: text.startswith(COUNTED), COUNTED_S)
            except TimeoutError:
                continue
            say(i=self.i, answered=True, counted=True, tries=tries, t=time.monotonic())
            return
        say(i=self.i, answered=True, counted=False, tries=TRIES, t=time.monotonic())


async def main_async(base: str, code: str, n: int, cookies: list[str]) -> None:
    gate = asyncio.Semaphore(JOINING_AT_ONCE)
    class_ = [Follower(i, base, code, cookies[i % len(cookies)] if cookies else "") for i in range(n)]

    async def join(follower: Follower) -> None:
        async with gate:
            await follower.session.open()
            await follower.session.wait_for(lambda text: any(m in text for m in BAR_MARKS))

    await asyncio.gather(*(join(f) for f in class_))
    say(joined=n, t=time.monotonic())
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line or line == "quit":
            break
        if line == "answer":
            await asyncio.gather(*(f.answer() for f in class_))
    await asyncio.gather(*(f.session.close() for f in class_), return_exceptions=True)


async def sit(base: str, page: str, n: int) -> None:
    sessions = [await Session(base, page).open() for _ in range(n)]
    say(joined=n, t=time.monotonic())
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


def main(argv: list[str]) -> int:
    if argv[0] == "visit":  # `visit BASE PAGE QUERY`: one session opens a page (by its name), one full run
        from txviz.app.lecture.warmup import open_once

        asyncio.run(open_once(argv[1], argv[2], argv[3] if len(argv) > 3 else ""))
        return 0
    if argv[0] == "idle":  # `idle BASE PAGE N`: N sessions sit on a page (its fragments rerun) until quit
        asyncio.run(sit(argv[1], argv[2], int(argv[3])))
        return 0
    base, code, n, *cookies = argv
    asyncio.run(main_async(base, code, int(n), cookies))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
