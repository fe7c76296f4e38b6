"""Server config and public mode: limits from one place, visitors cannot load what they type."""

from __future__ import annotations

import pytest
from conftest import ROOT
from streamlit.testing.v1 import AppTest

from txviz.core.config import ServerConfig, load_config
from txviz.core.errors import UserError


def test_defaults_are_for_a_user_on_their_own_machine():
    config = load_config({})
    assert config == ServerConfig() and not config.public and config.max_upload_mb == 20


def test_public_mode_from_the_environment_tightens_limits_and_reads_the_allow_list():
    config = load_config({"TXVIZ_PUBLIC": "1", "TXVIZ_ALLOWED_MODELS": "gpt2, bert-base-uncased"})
    assert config.public and config.allowed_models == ("gpt2", "bert-base-uncased")
    assert config.max_upload_mb == 5 and config.max_image_pixels == 4_000_000


def test_secrets_are_read_and_the_environment_wins():
    secrets = {"public": True, "max_batch": 4, "allowed_models": ["gpt2"]}
    config = load_config({"TXVIZ_MAX_BATCH": "16"}, secrets)
    assert config.public and config.max_batch == 16 and config.allowed_models == ("gpt2",)


def test_a_bad_value_gets_a_clear_message():
    with pytest.raises(UserError, match="TXVIZ_MAX_BATCH"):
        load_config({"TXVIZ_MAX_BATCH": "many"})


def _load_typed_model(name: str) -> None:
    from txviz.app import ui

    ui.load_model(name)


def _picker_options() -> None:
    import streamlit as st

    from txviz.app import ui

    st.session_state["choice"] = ui.model_picker()


def _oversize_upload() -> None:
    from types import SimpleNamespace

    from txviz.app import ui

    ui.checked_upload(SimpleNamespace(name="big.txt", size=6 * 1024 * 1024, getvalue=lambda: b""))


@pytest.fixture
def public(monkeypatch):
    from txviz.app import sessions

    monkeypatch.setenv("TXVIZ_PUBLIC", "1")
    sessions.config.clear()
    yield
    monkeypatch.delenv("TXVIZ_PUBLIC")
    sessions.config.clear()


def test_public_mode_refuses_a_local_path_and_a_hub_id_off_the_allow_list(public):
    for name in ("/etc", "someone/some-model"):
        at = AppTest.from_function(_load_typed_model, args=(name,), default_timeout=60).run()
        assert not at.exception
        assert "public txviz server" in at.error[0].value


def test_public_mode_offers_no_typed_model_and_refuses_an_oversize_upload(public):
    from txviz.app.ui import OTHER_MODEL

    at = AppTest.from_function(_picker_options, default_timeout=60).run()
    assert OTHER_MODEL not in at.selectbox[0].options and "minilm" in at.selectbox[0].options
    at = AppTest.from_function(_oversize_upload, default_timeout=60).run()
    assert "up to 5 MB" in at.error[0].value


def test_with_the_mode_unset_a_visitor_may_still_type_a_model():
    from txviz.app import sessions
    from txviz.app.ui import OTHER_MODEL

    sessions.config.clear()
    at = AppTest.from_function(_picker_options, default_timeout=60).run()
    assert OTHER_MODEL in at.selectbox[0].options
    at = AppTest.from_function(_oversize_upload, default_timeout=60).run()
    assert not at.error  # 6 MB is under the default 20 MB


@pytest.fixture
def short_texts(monkeypatch):
    from txviz.app import sessions

    monkeypatch.setenv("TXVIZ_MAX_TEXT_CHARS", "60")
    sessions.config.clear()
    yield 60
    monkeypatch.delenv("TXVIZ_MAX_TEXT_CHARS")
    sessions.config.clear()


def test_text_boxes_take_the_configured_limit(short_texts):
    from txviz.app import ui

    assert ui.max_text_chars() == 60 and ui.max_text_chars(400) == 60 and ui.max_text_chars(30) == 30
    at = AppTest.from_file(str(ROOT / "pages" / "15_Entailment.py"), default_timeout=300).run()
    assert not at.exception
    assert [box.max_chars for box in at.text_input] == [60, 60]


def test_every_text_box_in_the_app_asks_for_the_configured_limit():
    """A text box of a page, its views or txviz/app gives max_chars=ui.max_text_chars(...), never a constant."""
    import ast

    wrong = []
    views = [*ROOT.glob("txviz/*/views.py"), *ROOT.glob("txviz/*/views/*.py")]  # the pages' tab bodies
    for path in [*ROOT.glob("pages/*.py"), *ROOT.glob("txviz/app/*.py"), *views, ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            func = getattr(node, "func", None)
            if not (isinstance(func, ast.Attribute) and func.attr in {"text_input", "text_area"}):
                continue
            if isinstance(func.value, ast.Name) and func.value.id == "ui":
                continue  # ui.text_input applies the limit itself
            limit = next((k.value for k in node.keywords if k.arg == "max_chars"), None)
            called = getattr(limit, "func", None)
            if getattr(called, "attr", getattr(called, "id", None)) != "max_text_chars":
                wrong.append(f"{path.name}:{node.lineno}")
    assert not wrong, f"text boxes without max_chars=ui.max_text_chars(...): {wrong}"


def test_max_jobs_bounds_heavy_passes_running_at_once(monkeypatch):
    import threading
    import time
    from types import SimpleNamespace

    from txviz.app import sessions, ui

    running, peak, lock = [0], [0], threading.Lock()

    def heavy(loaded, n):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.2)
        inner(loaded, n)  # a cached result computed inside another takes no second place
        with lock:
            running[0] -= 1
        return n

    inner = ui.cached(spinner=False)(ui.heavy(lambda loaded, n: n))
    shared = ui.cached(max_entries=16, spinner=False)(ui.heavy(heavy))
    monkeypatch.setenv("TXVIZ_MAX_JOBS", "2")
    sessions.config.clear()
    try:
        loaded = SimpleNamespace(name="m", device="cpu", dtype="float32")
        threads = [threading.Thread(target=shared, args=(loaded, n)) for n in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        monkeypatch.delenv("TXVIZ_MAX_JOBS")
        sessions.config.clear()
    assert peak[0] == 2 and running[0] == 0
    with pytest.raises(UserError, match="max_jobs"):
        load_config({"TXVIZ_MAX_JOBS": "0"})


def _hold_every_slot(queue, ended: list) -> list:
    """Threads that each hold a place of the queue for a second (their end times go to ``ended``)."""
    import threading
    import time

    def hold_a_slot():
        with queue.turn("someone else"):
            time.sleep(1.0)
            ended.append(time.monotonic())

    holders = [threading.Thread(target=hold_a_slot) for _ in range(queue.max_jobs)]
    for thread in holders:
        thread.start()
    deadline = time.monotonic() + 10
    while queue.load()[0] < queue.max_jobs and time.monotonic() < deadline:
        time.sleep(0.01)
    return holders


def _heavy_pass() -> None:
    import time

    import streamlit as st

    from txviz.app import sessions

    st.session_state["ran_at"] = sessions.heavy(time.monotonic)


def test_a_heavy_pass_waits_its_turn_behind_running_ones():

    from txviz.app import sessions

    queue, ended = sessions.jobs(), []
    holders = _hold_every_slot(queue, ended)
    assert queue.load() == (queue.max_jobs, 0)
    at = AppTest.from_function(_heavy_pass, default_timeout=30).run()
    for thread in holders:
        thread.join(10)
    assert not at.exception
    assert len(ended) == queue.max_jobs and at.session_state["ran_at"] >= min(ended)  # the first slot freed
    assert queue.load() == (0, 0)


def _trace_pass() -> None:
    import time

    import streamlit as st
    from tiny_models import tiny_model, word_tokenizer

    from txviz.app import sessions
    from txviz.core.loaded import LoadedModel

    tok = word_tokenizer(["the", "cat", "sat"])
    loaded = LoadedModel("tiny", "decoder", tiny_model("llama", len(tok)), tok, None, "cpu")
    trace = sessions.trace(loaded, "the cat sat", ("weights",))
    st.session_state["ran_at"], st.session_state["shape"] = time.monotonic(), trace.weights.shape


def test_a_trace_waits_its_turn_in_the_same_queue_and_gets_its_own_trace():

    from txviz.app import sessions

    queue, ended = sessions.jobs(), []
    holders = _hold_every_slot(queue, ended)
    at = AppTest.from_function(_trace_pass, default_timeout=30).run()
    for thread in holders:
        thread.join(10)
    assert not at.exception
    assert at.session_state["ran_at"] >= min(ended)  # it ran only once a place was free
    assert at.session_state["shape"] == (2, 4, 5, 5)  # 2 layers, 4 heads, [CLS] the cat sat [SEP]
    assert queue.load() == (0, 0)
