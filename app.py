"""txviz: the entry point. It routes to the home page (txviz/app/home.py) and the scripts in pages/."""

from txviz import logs
from txviz.app import fragment_pages, legacy_pages, navigation, streamlit_private

logs.configure()  # first: txviz's warnings reach stderr whatever Streamlit does with its own loggers
streamlit_private.check()  # once per process: Streamlit's internals we read are all there, else one warning
fragment_pages.install()  # a fragment rerun asked for on a page the session has left runs where it is
legacy_pages.routed()  # this run goes through st.navigation: its page need not take over from pages/ mode
navigation.declare().run()  # every page, after a tab icon of our own (no request to a font host)
