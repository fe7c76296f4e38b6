"""The guided tour for a learner alone: a bar on every page while a lecture is on, with the step, its
talking points and question, previous and next. It lives in the session and in the link (tour=, tour_step=)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from txviz import page_map
from txviz.app import caching, links, projector
from txviz.app.lecture import asking
from txviz.core.errors import UserError
from txviz.lecture.files import shipped_lectures
from txviz.lecture.steps import Lecture, Step

TOUR = "_tour"  # {"lecture": name, "step": index, "right": {index: bool}, "done": bool}
GO = "_tour_go"  # the step to open at the next run (set by a button's callback)
LECTURE_PARAM, STEP_PARAM = "tour", "tour_step"  # tour_step is 1-based; "step" is a page's setting


@caching.shared_resource()
def lectures() -> dict[str, Lecture]:
    """The shipped lectures, read once for every session."""
    return shipped_lectures()


def start(name: str, step: int = 0, model: str | None = None) -> None:
    """A callback: begin the lecture's tour at ``step`` (the page switches at the next run); ``model``
    answers every question instead of the lecture's own models."""
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(f"_tour_q_{name}_")]:
        del st.session_state[key]  # a tour taken again asks its questions afresh
    st.session_state[TOUR] = {"lecture": name, "step": step, "right": {}, "done": False, "model": model}
    st.session_state[GO] = step


def _go_to(step: int) -> None:
    st.session_state[GO] = step


def _finish() -> None:
    st.session_state[TOUR]["done"] = True


def active() -> bool:
    """A tour is on in this session (or its link is being opened)."""
    return TOUR in st.session_state or LECTURE_PARAM in st.query_params


def leave() -> None:
    """A callback: end the tour; the page stays as it is."""
    st.session_state.pop(TOUR, None)
    for key in (LECTURE_PARAM, STEP_PARAM):
        st.query_params.pop(key, None)


def _restore() -> None:
    """A reload (a fresh session) with tour= and tour_step= in its link picks the tour up again."""
    if TOUR in st.session_state or LECTURE_PARAM not in st.query_params:
        return
    lecture = lectures().get(st.query_params[LECTURE_PARAM])
    try:
        step = int(st.query_params.get(STEP_PARAM, "1")) - 1
    except ValueError:
        step = 0
    if lecture is not None:
        st.session_state[TOUR] = {"lecture": lecture.name, "step": min(max(step, 0), len(lecture.steps) - 1)}
        st.session_state[TOUR] |= {"right": {}, "done": False, "model": None}


def step_params(lecture: Lecture, index: int) -> dict[str, str]:
    """The link of a tour's step: its page's settings, projector mode when on, and the tour itself."""
    tour = {LECTURE_PARAM: lecture.name, STEP_PARAM: str(index + 1)}
    return lecture.steps[index].query_params() | projector.link_params() | tour


def open_step(lecture: Lecture, index: int) -> None:
    """Switch to the step's page with exactly its settings (the page's other settings at their defaults)."""
    step = lecture.steps[index]
    # this session's values would win over the link
    for key in links.shared_keys(page_map.page(step.page).keys):
        st.session_state.pop(key, None)
    st.session_state[TOUR]["step"] = index
    st.switch_page(page_map.page(step.page).file, query_params=step_params(lecture, index))


def lecture_bar(page: str, load: Callable[[str], object]) -> None:
    """While a tour is on: where it is, the step's points and question, and previous / next.

    ``load`` gives the model of a name (ui.load_model: the app's one model cache)."""
    if not active():
        return  # the common case: no tour, and no lecture file read
    try:
        _restore()
        tour = st.session_state.get(TOUR)
        lecture = lectures().get(tour["lecture"]) if tour else None
    except UserError as error:  # a lecture file broken since the tour began: say so, the page goes on
        st.warning(str(error))
        return
    if lecture is None:
        return
    going = st.session_state.pop(GO, None)
    if going is not None:
        open_step(lecture, going)
    index = tour["step"]
    st.query_params[LECTURE_PARAM], st.query_params[STEP_PARAM] = lecture.name, str(index + 1)
    with st.container(border=True, key="tour-bar"):
        if tour.get("done"):
            _score(lecture, tour)
        else:
            _step(lecture, index, lecture.steps[index], page, load)


def _step(lecture: Lecture, index: int, step: Step, page: str, load: Callable[[str], object]) -> None:
    n = len(lecture.steps)
    st.caption(f"{lecture.title} · step {index + 1} of {n}")
    st.progress((index + 1) / n)
    st.markdown(f"**{step.title}**")  # the lecture file's own text
    for point in step.points:
        st.markdown(f"- {point}")
    if page != step.page:
        st.button("Back to this step's page", key="_tour_back", on_click=_go_to, args=(index,))
    if step.question is not None:
        _question(lecture, index, step, load)
    back, leave_col, forward = st.columns(3)
    back.button("Previous", key="_tour_prev", on_click=_go_to, args=(index - 1,), disabled=index == 0)
    leave_col.button("Leave the tour", key="_tour_leave", on_click=leave)
    if index + 1 < n:
        forward.button("Next", key="_tour_next", on_click=_go_to, args=(index + 1,), type="primary")
    else:
        forward.button("Finish: my score", key="_tour_finish", on_click=_finish, type="primary")


def _question(lecture: Lecture, index: int, step: Step, load: Callable[[str], object]) -> None:
    question = step.question
    model = st.session_state[TOUR].get("model") or asking.model_of(question, lecture.model)
    key = f"_tour_q_{lecture.name}_{index}"
    try:
        loaded = load(model) if question.asks_model else None
        answer = asking.ask(question, key, asking.offered(question, loaded))
        if answer is not None:
            found = asking.live_truth(question, loaded)
            st.session_state[TOUR]["right"][index] = asking.reveal(question, found, model, key, answer)
    except UserError as error:  # a layer or a word this model lacks: the tour goes on without it
        st.warning(f"{model} cannot answer this question: {error}")


def _score(lecture: Lecture, tour: dict) -> None:
    asked = [i for i, _ in lecture.questions()]
    right = sum(bool(tour["right"].get(i)) for i in asked)
    st.markdown(f"**{lecture.title}: done.**")
    st.metric("Your score", f"{right} of {len(asked)}", help="Questions answered right on this tour.")
    for i in asked:
        mark = {True: "right", False: "not this time"}.get(tour["right"].get(i), "not answered")
        st.markdown(f"- Step {i + 1}, {lecture.steps[i].title}: {mark}")
    again, leave_col = st.columns(2)
    again.button("Take it again", key="_tour_again", on_click=start, args=(lecture.name,))
    leave_col.button("Leave the tour", key="_tour_leave", on_click=leave)
