"""N txviz replicas on loopback ports behind HAProxy with cookie-sticky sessions, on one machine.

`python -m txviz.serving.replicas --replicas 2` (or `make serve-replicas N=2`) starts N
`streamlit run app.py` processes on 127.0.0.1, waits for their health checks, then runs HAProxy
with deploy/haproxy.cfg's settings and one server line per replica, until interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from txviz.core.paths import ROOT
from txviz.lecture.rooms import redis_server
from txviz.lecture.rooms.store import REDIS_ENV

log = logging.getLogger(__name__)

CONFIG = ROOT / "deploy" / "haproxy.cfg"
START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_config(replica_ports: list[int], port: int, template: str | None = None) -> str:
    """deploy/haproxy.cfg bound to 127.0.0.1:port, its servers replaced by replicas on loopback."""
    lines = []
    for line in (template or CONFIG.read_text()).splitlines():
        words = line.split()
        if words[:1] == ["server"]:
            continue
        if words[:1] == ["bind"]:
            line = f"    bind 127.0.0.1:{port}"
        lines.append(line)
    lines += [
        f"    server replica{i} 127.0.0.1:{p} check cookie replica{i}"
        for i, p in enumerate(replica_ports, start=1)
    ]
    return "\n".join(lines) + "\n"


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def serves_all(url: str, names: set[str]) -> bool:
    """Cookie-less requests through the balancer reach every replica (each answer names its replica)."""
    seen = set()
    for _ in range(2 * len(names)):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                seen.add(response.headers.get("X-Txviz-Replica"))
        except OSError:
            return False
    return names <= seen


def wait_until(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout_s:.0f} s")
        time.sleep(0.5)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a loaded machine can be slow to shut down
            log.warning("process %d did not stop within 30 s; killing it", process.pid)
            process.kill()
            process.wait()


@dataclass
class Cluster:
    """The running replicas and balancer: its URL, each replica's process by server name."""

    url: str
    replicas: dict[str, subprocess.Popen]
    balancer: subprocess.Popen
    folder: Path
    stopped: set[str] = field(default_factory=set)

    def stop_replica(self, name: str) -> None:
        """Stop one replica (its sessions are lost; the balancer's health check takes it out)."""
        _stop(self.replicas[name])
        self.stopped.add(name)


@contextlib.contextmanager
def cluster(
    n: int, port: int | None = None, log_folder: Path | None = None, redis_url: str | None = None
) -> Iterator[Cluster]:
    """N replicas and the balancer on 127.0.0.1 while the block runs; everything stops after it.

    With ``redis_url`` every replica keeps its lecture rooms there (TXVIZ_REDIS_URL), so they share them.
    """
    if shutil.which("haproxy") is None:
        raise RuntimeError("haproxy is not installed: apt-get install -y haproxy")
    folder = Path(log_folder or tempfile.mkdtemp(prefix="txviz-replicas-"))
    folder.mkdir(parents=True, exist_ok=True)
    ports = [free_port() for _ in range(n)]
    port = port or free_port()
    processes: list[subprocess.Popen] = []
    try:
        replicas = {}
        for i, replica_port in enumerate(ports, start=1):
            command = [
                sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(replica_port),
                "--server.address", "127.0.0.1", "--server.headless", "true",
            ]  # fmt: skip
            log = open(folder / f"replica{i}.log", "w")  # noqa: SIM115 - open while the process runs
            env = os.environ | ({REDIS_ENV: redis_url} if redis_url else {})
            replicas[f"replica{i}"] = subprocess.Popen(
                command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env
            )
            processes.append(replicas[f"replica{i}"])
        for replica_port in ports:
            wait_until(
                lambda p=replica_port: healthy(f"http://127.0.0.1:{p}"), START_TIMEOUT_S, "a replica start"
            )
        config = folder / "haproxy.cfg"
        config.write_text(loopback_config(ports, port))
        check = subprocess.run(["haproxy", "-c", "-q", "-f", str(config)], capture_output=True, text=True)
        if check.returncode:
            raise RuntimeError(f"haproxy refused {config}: {check.stderr or check.stdout}")
        log = open(folder / "haproxy.log", "w")  # noqa: SIM115
        balancer = subprocess.Popen(
            ["haproxy", "-db", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
        processes.append(balancer)
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: healthy(url), 30, "the balancer start")
        # on a busy machine a replica can miss its first health checks: wait until both are in
        wait_until(
            lambda: serves_all(url, set(replicas)), START_TIMEOUT_S, "every replica behind the balancer"
        )
        yield Cluster(url, replicas, balancer, folder)
    finally:
        for process in reversed(processes):
            _stop(process)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m txviz.serving.replicas", description=__doc__)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--port", type=int, default=8080, help="the balancer's port on 127.0.0.1")
    parser.add_argument("--redis", default=os.environ.get(REDIS_ENV, ""),
                        help="the Redis the replicas share lecture rooms in (default: start redis-server)")  # fmt: skip
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops every process
    with contextlib.ExitStack() as stack:
        url = args.redis or stack.enter_context(redis_server.redis_server()).url
        running = stack.enter_context(cluster(max(1, args.replicas), args.port, redis_url=url))
        print(
            f"{len(running.replicas)} replicas behind {running.url}, rooms in {url} (logs in {running.folder}); "
            "Ctrl-C stops"
        )
        with contextlib.suppress(KeyboardInterrupt):
            while all(p.poll() is None for p in [running.balancer, *running.replicas.values()]):
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
