"""A one-file Streamlit app served on a free loopback port, for tests of what a live server does."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from txviz.bench.load import free_port, launch, server_env, stop_server


@contextlib.contextmanager
def served(folder: Path, script: str) -> Iterator[str]:
    """The app ``script`` (its source) written to folder/tiny.py and served; yields its base URL."""
    (folder / "tiny.py").write_text(script)
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(folder / "tiny.py"), "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true",
               "--browser.gatherUsageStats", "false"]  # fmt: skip
    server = launch(command, port, folder / "server.log", server_env())
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(server)


def run_async(coroutine) -> Any:
    """Run a coroutine to its end in a thread of its own: the browser tests' Playwright keeps an event
    loop running in the main thread for the whole session, where asyncio.run refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
