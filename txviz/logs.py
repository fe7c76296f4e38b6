"""The app's and the CLI's logging: one stderr handler on the `txviz` logger, its level from TXVIZ_LOG_LEVEL.

Every module logs through its own `log = logging.getLogger(__name__)`, so all of them sit below the
`txviz` logger and share this one handler. Records still propagate to the root logger, which neither
Streamlit nor txviz configures, so a host that sets up root logging (or pytest's caplog) sees them too.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
VARIABLE = "TXVIZ_LOG_LEVEL"
DEFAULT = "WARNING"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

log = logging.getLogger(__name__)


class StderrHandler(logging.StreamHandler):
    """A stream handler that writes to whatever sys.stderr is when a record arrives."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self):
        # Looked up per record, not kept: a test runner swapping stderr must not leave us a closed file.
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure(environ: Mapping[str, str] | None = None) -> logging.Logger:
    """Set up the `txviz` logger once per process (later calls change nothing) and return it."""
    root = logging.getLogger("txviz")
    if any(isinstance(h, StderrHandler) for h in root.handlers):
        return root  # app.py runs on every rerun of every session: only the first call counts
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    given = (os.environ if environ is None else environ).get(VARIABLE, "").strip()
    level = given.upper() or DEFAULT
    root.setLevel(level if level in LEVELS else DEFAULT)
    if level not in LEVELS:
        log.warning("%s=%r is not one of %s; logging at %s", VARIABLE, given, ", ".join(LEVELS), DEFAULT)
    return root
