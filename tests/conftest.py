"""Shared fixtures and helpers for every tier: the real packaged models, a live app and a browser.

Tiers: tests/unit (pure maths, tiny models from tiny_models.py), tests/models (the packaged models),
tests/pages (AppTest), tests/browser (Playwright). Helpers stay importable: `from conftest import ...`.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from gpu_devices import device, fake_gpu  # noqa: F401  (the GPU tier's fixtures: tests/gpu)

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
UNIT = ROOT / "tests" / "unit"  # pure maths and tiny models built from configs
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(autouse=True)
def _hub_offline(monkeypatch):
    """No test reaches the Hugging Face Hub: huggingface_hub's offline mode, as HF_HUB_OFFLINE=1 sets it
    at import (setting the variable later no longer counts)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


STORES = {"TXVIZ_ATLAS_DIR": "atlas", "TXVIZ_FEATURES_DIR": "features"}


@pytest.fixture(scope="session", autouse=True)
def _store_dirs(tmp_path_factory):
    """Head Atlases and dictionaries built by tests (pages, links, the live app) go to temporary folders for
    the whole run, never the user's ~/.cache/txviz; set before any app server starts, so its process
    inherits them (the Features page's first dictionary is trained once, then opened by every test)."""
    mine = [name for name in STORES if name not in os.environ]
    for name in mine:
        os.environ[name] = str(tmp_path_factory.mktemp(STORES[name]))
    yield
    for name in mine:
        os.environ.pop(name, None)


@pytest.fixture(autouse=True)
def _unit_tests_stay_small(request, monkeypatch):
    """tests/unit runs pure maths and tiny models from configs: loading a real model there fails."""
    if UNIT not in request.node.path.parents:
        return
    packaged = {"minilm", "smollm2"} & set(request.fixturenames)
    if packaged:
        pytest.fail(f"tests/unit must not load {', '.join(sorted(packaged))}: put this test in tests/models.")
    from txviz import models

    def refuse(name, *args, **kwargs):
        raise AssertionError(f"tests/unit must not load {name}: put this test in tests/models.")

    monkeypatch.setattr(models, "load", refuse)


@pytest.fixture(scope="session")
def minilm():
    """The packaged MiniLM encoder, loaded once for the whole run (not in tests/unit)."""
    from txviz import models

    return models.load("minilm", "cpu")


@pytest.fixture(scope="session")
def smollm2():
    """The packaged SmolLM2 decoder, loaded once for the whole run (not in tests/unit)."""
    from txviz import models

    return models.load("smollm2", "cpu")


def drawing_files() -> list[Path]:
    """Every file that draws with Streamlit: the pages, app.py, the app's chrome and every topic's views."""
    views = [p for p in (ROOT / "txviz").rglob("*.py") if "views" in p.relative_to(ROOT / "txviz").parts[1:]
             or p.stem == "views"]  # fmt: skip
    return sorted(
        {*(ROOT / "pages").glob("*.py"), ROOT / "app.py", *(ROOT / "txviz" / "app").rglob("*.py"), *views}
    )


def page_files(script: Path) -> list[Path]:
    """A page script and the views it imports (a views package whole), which draw its tabs."""
    import ast

    files = [script]
    for node in ast.parse(script.read_text()).body:
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        for dotted in (node.module, *(f"{node.module}.{alias.name}" for alias in node.names)):
            if "views" in dotted.split("."):
                where = ROOT.joinpath(*dotted.split("."))
                found = sorted(where.glob("*.py")) if where.is_dir() else [where.with_suffix(".py")]
                files += [f for f in found if f.exists() and f not in files]
    return files


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(log_name: str = "streamlit.log"):
    """`streamlit run app.py` on 127.0.0.1 while the block runs; yields its base URL."""
    port = _free_port()
    ARTIFACTS.mkdir(exist_ok=True)
    command = [
        sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
        "--server.address", "127.0.0.1", "--server.headless", "true",
    ]  # fmt: skip
    with open(ARTIFACTS / log_name, "w") as log:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.5)
        else:
            process.kill()
            pytest.fail(f"The app did not start within 60 s; see test-artifacts/{log_name}")
        try:
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a loaded machine can be slow to shut down
                process.kill()
                process.wait()


@pytest.fixture(scope="session")
def app_server():
    """One live app for the whole session; yields its base URL."""
    with serve_app() as url:
        yield url


@pytest.fixture(scope="session")
def _browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(_browser):
    """A fresh Playwright page; a JavaScript dialog (alert) fails the test."""
    context = _browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    yield page
    context.close()
    assert not dialogs, f"a script ran in the page and opened a dialog: {dialogs}"


def page_url(base: str, page: str) -> str:
    """URL of a page, by its name in the page map or its script: pages/2_Attention_Explorer.py -> /Attention_Explorer."""
    from txviz import page_map

    return f"{base}/{page if page in page_map.BY_NAME else page_map.of_file(page).name}"


FIGURE = '[data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"], [data-testid="stImage"]'


def wait_for_app(page, timeout_ms: int = 180_000) -> None:
    """Wait until the script has drawn its title and finished running (no 'Running...' indicator)."""
    page.wait_for_selector('[data-testid="stApp"] h1', timeout=timeout_ms)
    # The status widget can appear late; the app root's script state is the reliable signal.
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout_ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms
    )


def screenshot(page, name: str, full_page: bool = True) -> Path:
    """The page (all of it, or what its window shows) as test-artifacts/NAME.png."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def assert_clean(at, context: object = "") -> None:
    """A run on valid input: no exception and no error box (an error box there is a bug too)."""
    assert not at.exception, (context, [e.value for e in at.exception])
    assert not at.error, (context, [e.value for e in at.error])


def plotly_array(value) -> np.ndarray:
    """A figure's data as numpy, whether plotly wrote a list or a typed base64 array ('bdata')."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        return array.reshape([int(s) for s in str(shape).split(",")]) if shape else array
    return np.asarray(value, dtype=float)


def click_grid(at, key: str, layer: int, head: int):
    """Click a cell of the clickable head grid ``key`` as the browser would, then rerun the page.

    AppTest cannot click a chart, so this sends what Streamlit's frontend sends after a click on a
    point selection: the chart's widget state, {"selection": {"pick": [{"layer": ..., "head": ...}]}}.
    """
    import json

    from txviz.figures.grids import PICK

    (chart,) = [c for c in at.get("vega_lite_chart") if c.key == key]
    states = at._tree.get_widget_states()  # AppTest has no public way to send a chart's event
    state = states.widgets.add()
    state.id = chart.proto.id
    state.string_value = json.dumps({"selection": {PICK: [{"layer": layer, "head": head}]}})
    return at._run(states)
