"""The app's navigation: Home, then every page of the page map (txviz/page_map.py) in its section,
titled and addressed by the map (so links keep working whichever section a page sits in)."""

from pathlib import Path

import streamlit as st

from txviz import page_map

HOME_SCRIPT = Path(__file__).with_name("home.py")
# The browser tab's icon, drawn by the page itself (Streamlit makes an emoji an inline SVG). It is set before
# st.navigation: without one, Streamlit's frontend takes the open page's sidebar icon, a :material/...:
# name, for the tab and fetches it as an SVG from fonts.gstatic.com, the one request outside this server
# (it fails offline with a console error). The sidebar's icons come from the font Streamlit bundles.
FAVICON = "🔍"  # run as a script: its last line draws the page
PAGE_FILES = [page.path for page in page_map.PAGES]  # in the sidebar's order


def streamlit_page(page: page_map.Page) -> st.Page:
    """The st.Page of a page of the map: its script, sidebar title, icon and URL name."""
    return st.Page(page.path, title=page.title, icon=page.icon, url_path=page.name)


def page_of(name: str) -> st.Page:
    """The st.Page of the page of that name, as st.page_link and st.switch_page take it."""
    return streamlit_page(page_map.page(name))


def sections() -> dict[str, list[tuple[Path, st.Page]]]:
    """Each section's (script, page) pairs, in the map's order."""
    return {
        title: [(page.path, streamlit_page(page)) for page in page_map.in_section(title)]
        for title in page_map.SECTIONS
    }


def home_page() -> st.Page:
    """The home page, the app's default."""
    # Given as a script, not as home.render, so this module imports nothing of the app.
    return st.Page(HOME_SCRIPT, title="Home", icon=":material/home:", default=True)


def declare() -> st.Page:
    """Every page to st.navigation, after the tab's icon of our own (FAVICON, not a page's material
    icon); returns the page this run opens."""
    st.set_page_config(page_icon=FAVICON)
    return st.navigation(all_pages(), expanded=True)  # every page listed, no "View more"


def all_pages() -> dict[str, list[st.Page]]:
    """Home first (in no section), then each section's pages, for st.navigation."""
    return {"": [home_page()]} | {title: [page for _, page in pairs] for title, pairs in sections().items()}
