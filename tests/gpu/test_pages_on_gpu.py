"""Every page, as it opens, with the sidebar's device set to cuda: no exception, no error box, and
every model it loads is loaded on the GPU."""

from __future__ import annotations

import pytest
import streamlit as st
from conftest import ROOT, assert_clean
from gpu_devices import pretend_on_gpu
from streamlit.testing.v1 import AppTest
from topic_calls import loaded_model

from txviz import models

PAGE_MODELS = ("minilm", "smollm2", "date-bart", "digits-vit", "digits-imagegpt")  # what pages open with
OPEN_WITH_A_MODEL = {
    2,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    15,
    16,
    17,
    18,
    19,
    23,
    24,
    25,
}  # page numbers; the others on a tab
PAGES = sorted((ROOT / "pages").glob("*.py"), key=lambda p: int(p.name.split("_")[0]))


@pytest.fixture
def loads(device, monkeypatch) -> list[tuple[str, str]]:
    """(name, device) of every model the page loads; on the pretend GPU, CPU models seen as on cuda."""
    seen: list[tuple[str, str]] = []
    load = models.load

    def spy(name, device_asked="auto", progress=None, dtype="float32"):
        seen.append((name, device_asked))
        if device.name == "cuda":
            return load(name, device_asked, progress, dtype)
        return pretend_on_gpu(loaded_model(name, "cpu", dtype))

    if device.name == "fake-gpu":
        for name in PAGE_MODELS:  # loaded before the pretend GPU is installed
            loaded_model(name)
    monkeypatch.setattr(models, "load", spy)
    if device.name == "fake-gpu":  # the sidebar offers cuda only where torch finds one
        real = models.default_device
        monkeypatch.setattr(
            models, "default_device", lambda d="auto": "cuda" if d in ("auto", "cuda") else real(d)
        )
        device.install()
    # Models and results are cached for every session under (name, device, precision): none from a
    # CPU test may be reused here, and none of the pretend GPU's may outlive this test.
    st.cache_resource.clear()
    st.cache_data.clear()
    yield seen
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_a_page_opens_on_the_gpu(loads, page):
    at = AppTest.from_file(str(page), default_timeout=300)
    at.session_state["device"] = "cuda"
    at.run()
    assert_clean(at, page.name)
    assert at.sidebar.selectbox(key="device").value == "cuda"
    assert all(where == "cuda" for _, where in loads), loads
    assert bool(loads) == (int(page.name.split("_")[0]) in OPEN_WITH_A_MODEL), loads
