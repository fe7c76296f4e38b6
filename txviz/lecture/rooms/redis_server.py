"""A private redis-server on a free loopback port, for the tests, the benchmark and local replicas.

It keeps its data in an append-only file (fsync every second) in its own folder, so a restart on the
same port and folder finds every room as it was: the fault tests stop and start it mid-lecture.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SERVER = "redis-server"
START_S = 20.0  # a busy machine can take seconds to start it and to load a large append-only file


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def installed() -> bool:
    return shutil.which(SERVER) is not None


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A redis-server on a port, its data in ``folder``: its URL, and stop(), start() and restart() for
    fault tests (what it held before a stop is there after the start)."""

    def __init__(self, port: int, folder: Path):
        self.port, self.folder = port, Path(folder)
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        # the append-only file, not snapshots: at most a second of changes is lost if the machine dies,
        # none at a stop (redis-server writes it out when terminated)
        return [SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]  # fmt: skip

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Start it on its port and folder (again, after a stop); returns once it answers PING."""
        if self.running():
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_S
        while not _answers(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop it as a shutdown does (SIGTERM: it writes its data out first); clients then get StoreDown."""
        if self.running():
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def restart(self, down_s: float = 0.0) -> None:
        """Stop it, stay down ``down_s`` seconds, and start it again on the same port and folder."""
        self.stop()
        time.sleep(down_s)
        self.start()


@contextlib.contextmanager
def redis_server(port: int | None = None, folder: str | Path | None = None) -> Iterator[RedisServer]:
    """Start redis-server while the block runs; its data lives in ``folder`` (kept), else in a temporary
    folder removed after."""
    if not installed():
        raise RuntimeError("redis-server is not installed: apt-get install -y redis-server (make redis)")
    temporary = folder is None
    server = RedisServer(port or free_port(), Path(folder or tempfile.mkdtemp(prefix="txviz-redis-")))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        if temporary:
            shutil.rmtree(server.folder, ignore_errors=True)
