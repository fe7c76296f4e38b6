"""A private redis-server on a free loopback port, for the tests, the benchmark and local replicas."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

SERVER = "redis-server"


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
    """A running redis-server: its URL, and stop() to take it away mid-test."""

    def __init__(self, process: subprocess.Popen, port: int):
        self.process, self.port = process, port
        self.url = f"redis://127.0.0.1:{port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@contextlib.contextmanager
def redis_server(port: int | None = None) -> Iterator[RedisServer]:
    """Start redis-server (no disk persistence) while the block runs."""
    if not installed():
        raise RuntimeError("redis-server is not installed: apt-get install -y redis-server (make redis)")
    port = port or free_port()
    folder = tempfile.mkdtemp(prefix="txviz-redis-")
    command = [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
               "--dir", folder]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not _answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.05)
        server = RedisServer(process, port)
        yield server
    finally:
        RedisServer(process, port).stop()
        shutil.rmtree(folder, ignore_errors=True)
