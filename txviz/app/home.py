"""The home page: the "Start here" path, the lessons, a card for each page grouped as the sidebar is, then
which device and models are ready."""

import streamlit as st

from txviz import models, page_map
from txviz.app import navigation, ui
from txviz.app.lecture import path
from txviz.app.lecture.lessons import load_lessons

RESEARCH = "Research tools"  # the section whose pages are marked as such on their cards
START_HERE_CSS = """<style>
.st-key-start-here [data-testid="stPageLink"] :is(span, div, p) { white-space: normal; text-overflow: clip; }
</style>"""  # a step's name wraps in its narrow card instead of being cut off
SECTION_NOTES = {
    RESEARCH: "For studying models rather than a first lesson: heavier analyses over many heads, "
    "texts or tokens, slower on a CPU.",
}


def render() -> None:
    """Draw the home page."""
    ui.setup_page(
        "txviz: see inside transformers",
        "Real models, exact formulas: attention per head and layer, positions, tokenization, masks, "
        "coreference, generation, cross-attention and vision transformers, computed live.",
    )
    start_here()
    lesson_cards()
    page_cards()
    device_and_models()


def start_here() -> None:
    """The path for a first visit, one numbered card per step, in a row."""
    st.subheader("Start here", anchor="start-here")
    st.caption(
        f"New to attention? {len(path.STEPS)} pages in order, each with Back and Next links at its top."
    )
    st.html(START_HERE_CSS)  # our own constant, never user text
    with st.container(key="start-here"):
        for column, (i, step) in zip(st.columns(len(path.STEPS)), enumerate(path.STEPS, 1), strict=True):
            with column.container(border=True):
                path.step_link(step, f"{i}. {step.title}")
                st.caption(step.points[0])
    course_map()


COURSE_MAP = "Course_Map"
FOUND_THERE = (
    "efficient transformers (over two pages), BERT and GPT objectives, using the encoder, mixture of "
    "experts, the il/elle example and the ViT as the books draw it"
)


def course_map() -> None:
    """Under the path: the course map, and the items found through it rather than in a page's first tab."""
    st.page_link(
        navigation.page_of(COURSE_MAP),
        label="Course map: self-attention grown into the transformer, each part linked to its page and tab",
        icon=":material/map:",
    )
    st.caption(f"Also found there, in later tabs of their pages: {FOUND_THERE}.")


def lesson_cards() -> None:
    """A card per lesson: its title, its first talking point and a button that opens it."""
    st.subheader("Lessons")
    st.caption(
        "Ready-made settings and talking points for a lecture; the sidebar's Lesson box opens them too."
    )
    lessons = load_lessons()
    columns = st.columns(min(len(lessons), 3) or 1)
    for i, lesson in enumerate(lessons):
        with columns[i % len(columns)].container(border=True):
            st.markdown(f"**{lesson.title}**")  # our own lesson files, as markdown, never HTML
            if lesson.steps[0].points:
                st.caption(lesson.steps[0].points[0])
            st.button(
                "Open the lesson", key=f"open-{lesson.name}", on_click=ui.open_lesson, args=(lesson.title,)
            )


def page_cards() -> None:
    """A card for each page, grouped as the sidebar is; the research tools are marked."""
    with st.container(key="pages"):
        for title in page_map.SECTIONS:
            st.subheader(title)
            if title in SECTION_NOTES:
                st.caption(SECTION_NOTES[title])
            columns = st.columns(3)
            for i, page in enumerate(page_map.in_section(title)):
                with columns[i % 3].container(border=True):
                    st.page_link(
                        navigation.streamlit_page(page), label=page.title, icon=":material/arrow_forward:"
                    )
                    if title == RESEARCH:
                        st.badge("Research tool", icon=":material/science:", color="violet")
                    st.caption(page.summary)


def device_and_models() -> None:
    """Where models run and which are ready, with a word on what attention weights mean."""
    st.subheader("Device and models")
    st.write(
        f"Models run on **{ui.current_device()}**"
        + (" (no CUDA GPU found)." if ui.current_device() == "cpu" else ".")
    )
    st.dataframe(
        [
            {
                "model": m.name,
                "kind": m.kind,
                "parameters": m.parameters,
                "source": m.source,
                "ready": "yes" if m.loadable else f"no: {m.reason}",
                "about": m.description,
            }
            for m in models.available()
        ],
        hide_index=True,
        width="stretch",
    )
    st.caption(
        "Attention weights show where a model routes information, not why it decides: "
        "read them as one signal among others (Jain & Wallace 2019; Wiegreffe & Pinter 2019)."
    )


if __name__ == "__main__":  # Streamlit runs a page script as __main__
    render()
