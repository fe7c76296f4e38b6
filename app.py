"""txviz: the entry point. It routes to the home page (txviz/app/home.py) and the scripts in pages/."""

import streamlit as st

from txviz.app import navigation

st.navigation(navigation.all_pages(), expanded=True).run()  # every page listed, no "View more"
