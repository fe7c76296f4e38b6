"""The precision picker: a model loaded in bfloat16 is another cache entry, its results too, with a note."""

import pytest
from conftest import assert_clean
from streamlit.testing.v1 import AppTest

from txviz.families import zoo


def _page(folder: str):
    import streamlit as st

    from txviz.app import ui

    ui.setup_page("Precision")
    loaded = ui.load_model(folder)
    st.text(f"loaded {loaded.dtype} {next(loaded.model.parameters()).dtype}")
    trace = ui.cached_trace(loaded, "the cat sat on the mat and the dog ran")
    st.text(f"weight {float(trace.weights[1, 2, 5, 1]):.9f} {trace.weights.dtype}")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(zoo.folders(tmp_path_factory.mktemp("zoo"), {"Llama"})["Llama"])


def test_bfloat16_loads_its_own_model_and_results_with_a_note(folder):
    at = AppTest.from_function(_page, args=(folder,), default_timeout=120).run()
    assert_clean(at)
    assert at.selectbox(key="precision").options == ["float32", "bfloat16"]  # no float16 without a GPU
    assert at.text[0].value == "loaded float32 torch.float32"
    full = at.text[1].value
    assert not any("greedy" in c.value for c in at.sidebar.caption)

    at.selectbox(key="precision").set_value("bfloat16").run()
    assert_clean(at)
    assert at.text[0].value == "loaded bfloat16 torch.bfloat16"
    half = at.text[1].value
    assert half.endswith("float32") and half != full  # the cached trace is the bfloat16 model's own
    assert abs(float(half.split()[1]) - float(full.split()[1])) < 0.02
    assert any("greedy (most likely) tokens may change" in c.value for c in at.sidebar.caption)

    at.selectbox(key="precision").set_value("float32").run()
    assert at.text[1].value == full
