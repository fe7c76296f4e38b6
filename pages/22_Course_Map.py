"""Course map: self-attention growing into the transformer, each part linked to the page and tab that shows it."""

import streamlit as st

from txviz.app import teaching, ui
from txviz.app.lecture import path
from txviz.coursemap import figures, linearity
from txviz.coursemap.parts import ADDED, ADDITIONS, BURIED, CORE, PARTS, SUMMARY, Part, part
from txviz.lecture.steps import Step

ui.setup_page(
    "Course_Map",
    "Self-attention plus four additions (positions, several heads, a nonlinearity, masked decoding) is the "
    "transformer; a block, residuals and norms wrap it. Every part links to the page and tab that shows it, "
    "and the items the pages keep in later tabs are found here too.",
)

keys = [p.key for p in PARTS]
chosen = st.selectbox(
    "Follow one part",
    keys,
    index=ui.link_index("map_part", keys),
    format_func=lambda key: part(key).name,
    key="map_part",
)
# In projector mode the chain and the summary come first, in view at 1280 x 720; the other rows follow.
ui.show_figure(figures.course_map_figure(chosen, rows=slice(0, 2) if ui.presenting() else slice(None)),
               key="course_map")  # fmt: skip
teaching.notice(  # attention's weights are a softmax of X: only the values lack a nonlinearity
    "self-attention alone is a weighted average that ignores order, has one way of looking and no "
    "nonlinearity on the values (its weights are a softmax of the inputs, so it is not linear in X); each "
    "addition fixes one of these, and the decoder's mask keeps it from reading the future."
)
if ui.presenting():
    ui.show_figure(figures.course_map_figure(chosen, rows=slice(2, None)), key="course_map_rest")


def links(item: Part) -> None:
    """The part's name, what it adds, and a link to each page and tab that shows it."""
    st.markdown(f"**{item.name}**: {item.adds}.")
    for link in item.links:
        where = f"{link.page.replace('_', ' ')}" + (f", tab {link.tab}" if link.tab else "")
        path.step_link(Step(link.page, link.settings, title=link.what).check(), f"{where}: {link.what}")


st.info(f"**{part(chosen).name}**: {part(chosen).adds}.")
first, second = st.columns(2)
with first:
    st.subheader("Self-attention and its four additions")
    st.caption("CS60010's four additions that turn self-attention into a transformer, in its order.")
    for item in (CORE, *ADDITIONS):
        links(item)
    st.caption(linearity.sentence(linearity.measure()))  # a few microseconds of numpy: no cache needed
with second:
    st.subheader("The transformer summary")
    st.caption("What the block and the stack add around them.")
    for item in SUMMARY:
        links(item)
st.subheader("Found here: items the pages keep in later tabs")
st.caption(
    "Efficient transformers span two pages; the objectives and using the encoder are the last tabs of Masking "
    "Patterns, mixture of experts a late tab of Transformer Block, il/elle the end of Coreference (and the "
    "grammar model's translations on Encoder Decoder)."
)
columns = st.columns(2)
for i, item in enumerate(BURIED):
    with columns[i % 2]:
        links(item)
st.subheader("Demos added since, each link with its settings")
columns = st.columns(2)
for i, item in enumerate(ADDED):
    with columns[i % 2]:
        links(item)
