"""The pages/-folder workaround reads one private Streamlit flag: fail loudly if an upgrade drops it."""

from streamlit.runtime.pages_manager import PagesManager

from txviz.app import legacy_pages


def test_streamlit_still_has_the_flag_we_read():
    assert hasattr(PagesManager, "uses_pages_directory")


def test_the_flag_decides(monkeypatch):
    monkeypatch.setattr(PagesManager, "uses_pages_directory", True)
    assert legacy_pages.running_the_folder_way()
    monkeypatch.setattr(PagesManager, "uses_pages_directory", False)
    assert not legacy_pages.running_the_folder_way()
    monkeypatch.setattr(PagesManager, "uses_pages_directory", None)  # no session has started yet
    assert not legacy_pages.running_the_folder_way()
