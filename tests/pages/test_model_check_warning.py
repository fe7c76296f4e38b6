"""A model whose self-check at load failed is marked in the pickers and warned about on the page."""

from streamlit.testing.v1 import AppTest


def _page():
    import streamlit as st

    from txviz.app import ui
    from txviz.core.loaded import LoadedModel

    ui._cached_model = lambda name, device, dtype="float32": LoadedModel(
        name, "encoder", None, None, None, "cpu", check_gap=0.25
    )
    ui.load_model("odd-model")
    st.selectbox("picker", ["odd-model"], format_func=ui._marked, key="picked")


def test_a_failed_self_check_is_warned_about_and_marked(monkeypatch):
    from txviz.app import ui

    monkeypatch.setattr(ui, "_cached_model", ui._cached_model)  # the page replaces it: put it back after
    app = AppTest.from_function(_page).run(timeout=60)
    assert not app.exception
    assert any("differs from the model's own attention by 0.25" in w.value for w in app.warning)
    assert "⚠" in app.selectbox(key="picked").options[0]
