"""Lectures as guided tours: each step opens a page with its settings, and asks you to predict first."""

import streamlit as st

from txviz import models, page_map
from txviz.app import sessions, teaching, ui
from txviz.app.lecture import tour
from txviz.lecture import figures

ui.setup_page(
    "Lectures",
    "A lecture is a list of steps: each opens a page with its settings and says what to look at; some ask "
    "you to predict what the model will do before the live model answers.",
)
with ui.user_errors():  # a malformed lecture file: its message names the file and the step
    lectures = tour.lectures()
names = list(lectures)
name = st.selectbox(
    "Lecture",
    names,
    index=ui.link_index("lecture", names),
    format_func=lambda n: lectures[n].title,
    key="lecture",
)
lecture = lectures[name]
st.caption(
    f"From {lecture.source}. Questions are answered by {lecture.model} unless a step names another model."
)
ui.show_figure(figures.outline_figure(lecture), key="outline")
teaching.notice(
    "each marker is a step and the page it opens; the shaped ones ask a question, answered by the live "
    "model when you lock in your guess, so another model gives its own answers."
)
LECTURES_OWN = "The lecture's own models"
offered = [LECTURES_OWN, *sessions.offered_models(models.names(("encoder", "decoder")))]
answering = st.selectbox(
    "Questions answered by",
    offered,
    index=ui.link_index("tour_model", offered),
    key="tour_model",
    help="Another model gives its own truth: its heads attend elsewhere and it predicts other tokens. "
    "A question it cannot answer (a layer it lacks; a next token from an encoder) is skipped.",
)
st.button(
    "Start the tour",
    key="start_tour",
    type="primary",
    icon=":material/play_arrow:",
    on_click=tour.start,
    args=(name, 0, None if answering == LECTURES_OWN else answering),
)
st.dataframe(
    [
        {
            "step": i + 1,
            "title": step.title,
            "page": page_map.page(step.page).title,
            "question": step.question.kind.replace("_", " ") if step.question else "",
        }
        for i, step in enumerate(lecture.steps)
    ],
    hide_index=True,
)
st.caption(
    "Lecture files live in assets/lectures/ (YAML): a title, a default model and steps, each a page, its "
    "link settings, talking points and an optional question."
)
