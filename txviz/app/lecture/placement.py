"""Where a browser puts each element a run sends, checked as Streamlit's frontend checks it, so a session
without a browser can say when a real one would have stopped ("Bad delta path index ...")."""

from __future__ import annotations

import collections


class Places:
    """How many children each block of the page has, as the browser builds it from the messages."""

    def __init__(self) -> None:
        self.children: dict[tuple[int, ...], int] = {}
        self.page: str | None = None  # the page the browser shows (its last full run's, or navigation's)
        self.stopped: str | None = None  # the first element a browser could not place
        self.recent: collections.deque[str] = collections.deque(maxlen=60)  # the last messages, for a report

    def new_session(self, page: str, fragment_run: bool) -> None:
        """A run starts; the browser empties its page when the run names another page (even a fragment's)."""
        self.recent.append(
            f"new_session page={page[:8]} fragment_run={fragment_run} (shown: {(self.page or '')[:8]})"
        )
        if self.page is not None and page != self.page:
            self.children.clear()
        if not fragment_run or self.page is None:
            self.page = page

    def navigation(self, page: str) -> None:
        """st.navigation ran: the page the browser now shows."""
        self.recent.append(f"navigation page={page[:8]}")
        self.page = page or self.page

    def delta(self, path: list[int] | tuple[int, ...], fragment: str = "") -> None:
        """An element or block at ``path``: each block on the way must exist, and the last index may add
        one child at most."""
        self.recent.append(f"delta {list(path)} fragment={fragment[:8]}")
        for depth in range(1, len(path)):
            parent, index = tuple(path[:depth]), path[depth]
            known = self.children.get(parent, 0)
            last = depth == len(path) - 1
            if index > known or (not last and index == known):
                self._stop(f"Bad delta path index {index} (should be between [0, {known}]) at {list(path)}")
                return
            self.children[parent] = max(known, index + 1)

    def _stop(self, why: str) -> None:
        if self.stopped is None:
            self.stopped = why
