"""The Lecture Room page: start or join a room; the presenter's console (join code, QR, the projector
window's link, this step and the next, the live tally, results) and a follower's waiting view.

The lecturer's window stays here while the lecture runs (its Next moves the room, not this window): the
projector shows a second window opened from here, a follower without the key. A lecturer with one screen
presses "Present in this window" and drives from the room bar of each page instead.
"""

from __future__ import annotations

import json
import logging

import streamlit as st

from txviz.app import links, projector, ui
from txviz.app.lecture import room, room_bars
from txviz.app.lecture.room_lectures import lectures, question_ref
from txviz.lecture import figures
from txviz.lecture.questions import tally, truth_label
from txviz.lecture.rooms import RoomError
from txviz.lecture.rooms.export import Asked, results_csv

log = logging.getLogger(__name__)
JOIN_PROBLEM = "_room_join_problem"
AD_HOC = "No lecture: drive it myself"
EXAMPLE_TALLY = {"keys": 17, "cabinet": 9, "table": 4}  # what a reveal looks like, before any room


def show() -> None:
    """The view of this session's part: the presenter's console, a follower's, or start and join."""
    if room.is_lecturer():
        console()
    elif room.code():
        waiting()
    else:
        start_or_join()


def show_more() -> None:
    """Under the console and its notice: results, a resume link and close; then the class is told of
    this run's Next or Reveal (the console drew first)."""
    if room.is_lecturer():
        state = room.store().state(room.code())
        results(state)
        resume_link()
        st.button("Close the room", key="room_close", on_click=_close)
    room.tell_class()


def start_or_join() -> None:
    start, join = st.columns(2)
    with start.container(border=True):
        st.subheader("Lead a room")
        by_title = {lecture.title: name for name, lecture in lectures().items()}
        options = [*by_title, AD_HOC]
        chosen = st.selectbox(
            "Lecture", options, key="room_lecture", index=links.link_index("room_lecture", options)
        )
        st.button("Start a room", key="room_start", type="primary", on_click=room.start,
                  args=(by_title.get(chosen, ""),))  # fmt: skip
        st.caption(
            "This window becomes your presenter console; open the projector window from it. Students "
            "join with the code or the QR code the projector shows."
        )
    with join.container(border=True):
        st.subheader("Join a room")
        st.text_input(
            "Join code", key="room_code_typed", max_chars=ui.max_text_chars(12), placeholder="e.g. K7P3QX"
        )
        st.text_input("Nickname (optional)", key="room_nickname", max_chars=ui.max_text_chars(24))
        st.button("Join", key="room_join", on_click=_join)
        problem = st.session_state.pop(JOIN_PROBLEM, None)
        if problem:
            st.error(problem)  # an unknown code, a full room: the store's message, plain text
    with projector.on_stage():  # in projector mode the example comes first, above the two forms
        st.subheader("At reveal, the projector shows the class's answers beside the model's (an example)")
        projector.draw(figures.tally_figure(EXAMPLE_TALLY, "keys"), key="room_example")


def _join() -> None:
    try:
        room.join(st.session_state.get("room_code_typed", ""), st.session_state.get("room_nickname", ""))
    except RoomError as error:
        st.session_state[JOIN_PROBLEM] = str(error)


def console() -> None:
    """The presenter's steps and live tally first; then the join code and QR, the projector window's
    link, and one screen's way to present."""
    state = room.store().state(room.code())
    presenter(state)
    url = room.join_url()
    code_col, qr_col = st.columns([3, 2], vertical_alignment="center")
    with code_col:
        st.markdown(f"### Join code: `{room.code()}`")  # our own code: six letters and digits
        st.code(url, language=None, wrap_lines=True)
        st.caption(f"{state.title} · this window is yours: the class sees the projector window")
        projecting, here = st.columns(2)
        projecting.link_button(
            "Open the projector window", room.projector_url(), type="primary", width="stretch",
            help="A second window for the projector: the step, the join code and, at reveal, the tally. "
            "It holds no key: a link copied from it cannot drive the room.",
        )  # fmt: skip
        if state.step:
            here.button("Present in this window", key="room_go", on_click=room.present_here, width="stretch",
                        help="One screen: this window shows the steps in projector mode; drive from the "
                        "room bar at the top of each page.")  # fmt: skip
        else:
            st.caption("Open any page and press 'Bring the class here' in the room bar.")
    qr_col.image(room.join_qr(url), caption="Scan to join", width=180)


def presenter(state) -> None:
    """The current and next step with their talking points, the step buttons and the live tally."""
    chosen = lectures().get(state.lecture)
    with st.container(border=True, key="room_presenter"):
        if chosen:
            now, after = st.columns(2)
            for column, index, label in ((now, state.index, "Now"), (after, state.index + 1, "Next")):
                if 0 <= index < len(chosen.steps):
                    step = chosen.steps[index]
                    column.markdown(f"**{label} ({index + 1} of {len(chosen.steps)}): {step.title}**")
                    for point in step.points:
                        column.markdown(f"- {point}")
            back, forward, act = st.columns(3)
            room_bars.step_buttons(state, back, forward, follow=False)
            if state.question and not state.revealed:
                act.button("Reveal", key="_room_reveal", width="stretch", on_click=room_bars.ask_reveal)
        room_bars.lecturer_live(ui.load_model)


def results(state) -> None:
    """Every question's answers as CSV (labels as the tally shows them, the live model's truth)."""
    chosen = lectures().get(state.lecture)
    if chosen and chosen.questions():
        st.button("Prepare the results (CSV)", key="room_results", on_click=_prepare)
        if st.session_state.pop("_room_prepare", False):
            st.download_button("Download the results", results_csv(room.store().nicknames(room.code()),
                               [_asked(chosen, i) for i, _ in chosen.questions()]),
                               file_name=f"room-{room.code()}.csv", mime="text/csv", key="room_csv")  # fmt: skip
    names = sorted(n for n in room.store().nicknames(room.code()).values() if n)
    if names:  # folded: a name reaches the screen only when the lecturer opens it
        with st.expander(f"Students who gave a nickname ({len(names)}; opening shows them on this screen)"):
            st.dataframe({"nickname": names}, hide_index=True)  # a table of plain text, never HTML


def _prepare() -> None:
    st.session_state["_room_prepare"] = True


def _asked(lecture, index: int) -> Asked:
    """One question's results: each answer by its tally label, the truth the live model gives now."""
    ref = question_ref(lecture, index)
    question = lecture.steps[index].question
    found = room_bars.truth((question, lecture.model), ui.load_model)
    labels = {}
    for seat, raw in room.store().answers(room.code(), ref["id"]).items():
        counted = [label for label, n in tally(question, [json.loads(raw)], found).items() if n]
        labels[seat] = counted[0] if counted else raw
    return Asked(question.prompt, truth_label(question, found) or found.label, labels)


def resume_link() -> None:
    """A one-time link that gives this room's control to another browser (shown once, never again)."""
    st.button("Make a resume link", key="room_resume", on_click=room.make_resume_link,
              help="To drive the room from another browser or after clearing cookies: it works once.")  # fmt: skip
    ticket = st.session_state.pop(room.RESUME_SHOWN, None)
    if ticket:
        st.warning(
            "Anyone who opens this link drives the room, once. Keep it private: not on the projector, "
            "not in a chat. Making another one cancels this one."
        )
        st.code(f"{room.join_url()}&resume={ticket}", language=None, wrap_lines=True)


def _close() -> None:
    room.store().close(room.code(), st.session_state.get(room.KEY))
    log.info("room %s closed by its lecturer", room.code())
    room.announce()  # the followers' bars learn the room is gone and leave it
    room.leave()


def waiting() -> None:
    """A follower on this page: the step is one click away (the room bar above follows it by itself)."""
    state = room.store().state(room.code())
    if room.is_projector():
        st.markdown(f"## Join at {room.join_url()} · code `{room.code()}`")  # our own text
        st.image(room.join_qr(room.join_url()), width=320)
        return
    st.markdown(f"You are in room **{room.code()}**: {state.title}.")
    if state.step:
        st.button("Go to the lecturer's step", key="room_follow", type="primary", on_click=_follow)
    else:
        st.caption("The lecturer has not opened a step yet: this page moves by itself when they do.")
    st.button("Leave the room", key="room_leave", on_click=room.leave)
    st.caption("At reveal the projector shows the class's answers like this (an example):")
    projector.draw(figures.tally_figure(EXAMPLE_TALLY, "keys"), key="room_example")


def _follow() -> None:
    st.session_state[room.FOLLOW] = True
    st.session_state[room.AT] = None
