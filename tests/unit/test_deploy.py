"""deploy/: the compose file is well-formed, HAProxy's config pins sessions and checks health."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from txviz.core.paths import ROOT
from txviz.serving.replicas import CONFIG, loopback_config

COMPOSE = ROOT / "deploy" / "docker-compose.yml"


def server_lines(config: str) -> list[list[str]]:
    return [line.split() for line in config.splitlines() if line.split()[:1] == ["server"]]


def test_the_compose_file_builds_the_repo_dockerfile_behind_the_balancer():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    replicas = [name for name, s in services.items() if "build" in s]
    assert len(replicas) >= 2
    for name in replicas:
        assert (COMPOSE.parent / services[name]["build"] / "Dockerfile").is_file()
    balancer = services["balancer"]
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in balancer["volumes"]
    assert set(balancer["depends_on"]) == set(replicas)
    # every replica is a server of the balancer, on the port the Dockerfile exposes
    assert [words[1:3] for words in server_lines(CONFIG.read_text())] == [[n, f"{n}:8501"] for n in replicas]


def test_sessions_stick_by_cookie_and_health_is_checked_on_streamlit_s_endpoint():
    config = CONFIG.read_text()
    assert "cookie TXVIZ_REPLICA insert indirect nocache" in config
    assert "option httpchk GET /_stcore/health" in config
    assert "timeout tunnel 1h" in config  # the websocket outlives ordinary request timeouts
    for words in server_lines(config):
        assert "check" in words and words[words.index("cookie") + 1] == words[1]


def test_the_loopback_config_has_one_server_per_replica_and_binds_loopback_only():
    config = loopback_config([9001, 9002, 9003], 8088)
    assert [w[1:3] for w in server_lines(config)] == [
        ["replica1", "127.0.0.1:9001"], ["replica2", "127.0.0.1:9002"], ["replica3", "127.0.0.1:9003"],
    ]  # fmt: skip
    binds = [line.split() for line in config.splitlines() if line.split()[:1] == ["bind"]]
    assert binds == [["bind", "127.0.0.1:8088"]]


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed (make serve-replicas)")
def test_haproxy_accepts_both_configs(tmp_path):
    loopback = tmp_path / "loopback.cfg"
    loopback.write_text(loopback_config([9001, 9002], 8088))
    for path in (CONFIG, loopback):
        check = subprocess.run(["haproxy", "-c", "-f", str(path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
