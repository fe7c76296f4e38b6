"""A room's warm-up opens a step's page headlessly on the server: its cached work is done then, so a
session arriving later with the same settings runs none (counted per call as the lecture benchmark's
counting server counts forward passes). Behind Streamlit's own HTTPS too, with a certificate made here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest
from tiny_apps import run_async

from txviz.app import streamlit_private
from txviz.app.lecture import warmup
from txviz.app.lecture.headless import Session, tls_for
from txviz.bench.load import ROOT, free_port, launch, server_env, stop_server
from txviz.lecture.rooms.base import FOLLOWING_S
from txviz.lecture.steps import Step

PAGE = """
import json
import pathlib

import streamlit as st

from txviz.app.caching import shared_resource

COUNT = pathlib.Path(__file__).with_name("forwards.txt")


@shared_resource()
def work(n: int) -> int:
    with open(COUNT, "a") as out:
        out.write(f"{n}\\n")
    return n * n


n = json.loads(st.query_params.get("n", "1"))
st.markdown(f"square {work(n)}")
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm")
    (folder / "warmpage.py").write_text(PAGE)
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(folder / "warmpage.py"), "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true",
               "--browser.gatherUsageStats", "false"]  # fmt: skip
    env = server_env() | {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    server = launch(command, port, folder / "server.log", env)
    yield f"http://127.0.0.1:{port}", folder / "forwards.txt"
    stop_server(server)


def runs(count) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def visit(base: str, n: int, more: str = "") -> None:

    async def go() -> None:
        session = await Session(base, "warmpage", f"n={n}" + (f"&{more}" if more else "")).open()
        try:
            await session.wait_for(lambda text: text.startswith("square"), timeout=60)
        finally:
            await session.close()

    run_async(go())


def test_a_warmed_step_costs_the_next_session_no_work(app):
    base, count = app
    step = Step("warmpage", {"n": 7}, title="a step")
    thread = warmup.warm([step], base=base)
    assert thread is not None
    thread.join(120)
    assert runs(count) == 1  # the warm-up did the page's work
    visit(base, 7)
    assert runs(count) == 1  # the class arrives: nothing runs again
    visit(base, 8)
    assert runs(count) == 2  # other settings are other work: the counter counts
    assert warmup.warm([step], base=base) is None  # warmed already: not again


TLS_PAGE = (
    PAGE.replace(
        "COUNT = ", "from txviz.app.lecture import warmup\nfrom txviz.lecture.steps import Step\nCOUNT = "
    )
    + """
if st.query_params.get("warm"):  # as a lecturer's move does: the server warms a step on itself
    warmup.warm([Step("warmpage", {"n": 7}, title="a step")])
"""
)


def self_signed(folder) -> tuple[str, str]:
    """A certificate for the server's public name (never 127.0.0.1) and its key, made with openssl."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is missing")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=txviz.example.org", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)  # fmt: skip
    return str(cert), str(key)


@pytest.fixture(scope="module")
def tls_app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm_tls")
    (folder / "warmpage.py").write_text(TLS_PAGE)
    cert, key = self_signed(folder)
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(folder / "warmpage.py"), "--server.port", str(port),
               "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats",
               "false", "--server.sslCertFile", cert, "--server.sslKeyFile", key]  # fmt: skip
    env = server_env() | {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop(streamlit_private.SWITCH, None)
    log = open(folder / "server.log", "w")  # noqa: SIM115 - closed after the server stops
    server = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"https://127.0.0.1:{port}"
    unchecked = tls_for("127.0.0.1")  # as the warm-up speaks to its own server
    end = time.monotonic() + 120
    while True:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=2, context=unchecked).status == 200:
                break
        except OSError:
            if time.monotonic() > end:
                stop_server(server)
                pytest.fail(f"the HTTPS app did not start; see {folder / 'server.log'}")
            time.sleep(0.5)
    yield base, folder / "forwards.txt", folder / "server.log"
    stop_server(server)
    log.close()


def test_behind_https_a_warm_up_on_the_server_fills_the_steps_cache(tls_app):
    base, count, server_log = tls_app
    visit(base, 1, "warm=1")  # the server starts warming n=7 on itself, over wss:// to its loopback
    end = time.monotonic() + 120
    while runs(count) < 2 and time.monotonic() < end:
        time.sleep(0.2)
    assert runs(count) == 2, server_log.read_text()  # n=1 for the visit, n=7 by the warm-up
    visit(base, 7)
    assert runs(count) == 2  # the class arrives at the warmed step: nothing runs again
    assert "failed" not in server_log.read_text()


def test_own_address_follows_the_servers_tls_and_address(monkeypatch):
    options = {"server.address": "", "server.port": 8443, "server.baseUrlPath": "/txviz/",
               "server.sslCertFile": "cert.pem", "server.sslKeyFile": "key.pem"}  # fmt: skip
    monkeypatch.setattr(warmup.st, "get_option", options.get)
    assert warmup.own_address() == "https://127.0.0.1:8443/txviz"
    options.update({"server.sslKeyFile": None, "server.address": "::1", "server.baseUrlPath": ""})
    assert warmup.own_address() == "http://[::1]:8443"


def test_with_the_adapter_off_nothing_is_warmed(monkeypatch):
    monkeypatch.setenv(streamlit_private.SWITCH, "off")
    monkeypatch.setattr(streamlit_private, "_STATE", {})
    assert warmup.warm([Step("warmpage", {"n": 9})], base="http://127.0.0.1:1") is None


def test_the_step_query_is_what_a_followers_page_switch_sends():
    assert warmup.step_query(Step("p", {"view": "One head, by hand", "scaled": True})) == (
        "view=%22One+head%2C+by+hand%22&scaled=true"
    )


def test_a_follower_writes_seen_at_most_every_few_seconds(monkeypatch):
    from txviz.app.lecture import room

    written, clock = [], [100.0]

    class Store:
        def seen(self, code, seat):
            written.append((code, seat, clock[0]))

    monkeypatch.setattr(room, "store", Store)
    monkeypatch.setattr(room.st, "session_state", {})
    monkeypatch.setattr(room.time, "monotonic", lambda: clock[0])
    for _ in range(int(room.SEEN_S / 0.5) * 2):  # polls every 0.5 s for twice SEEN_S
        room.mark_seen("ABCDEF", "seat")
        clock[0] += 0.5
    assert [t for *_, t in written] == [100.0, 100.0 + room.SEEN_S]  # two writes, SEEN_S apart
    assert room.SEEN_S < FOLLOWING_S / 2  # a follower never drops out of the count between writes
