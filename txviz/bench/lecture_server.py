"""The app for the lecture benchmark, counting forward passes: `python -m txviz.bench.lecture_server COUNT_FILE
STREAMLIT_ARGS...` wraps the front door's run, step and generate before any page imports them, appends one
line to COUNT_FILE per pass, then runs `streamlit run` in this process."""

from __future__ import annotations

import faulthandler
import functools
import runpy
import signal
import sys
import threading

from txviz.core import running

_LOCK = threading.Lock()


def counting(func, path: str):
    @functools.wraps(func)
    def counted(*args, **kwargs):
        with _LOCK, open(path, "a") as out:
            out.write(f"{func.__name__}\n")
        return func(*args, **kwargs)

    return counted


def main() -> None:
    path, rest = sys.argv[1], sys.argv[2:]
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a stalled run: every thread's stack to the log
    for name in ("run", "step", "generate"):
        setattr(running, name, counting(getattr(running, name), path))
    sys.argv = ["streamlit", "run", *rest]
    runpy.run_module("streamlit", run_name="__main__")  # `python -m streamlit run ...`, in this process


if __name__ == "__main__":
    main()
