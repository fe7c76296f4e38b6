"""Lecture room: lead thirty laptops through a lecture, ask the class to predict, reveal the live answer."""

from txviz.app import teaching, ui
from txviz.app.lecture import room_page

ui.setup_page(
    "Lecture_Room",
    "Start a room from a lecture (or drive it yourself); students join with a code and follow your steps.",
    icon="🎓",
)
with ui.user_errors():
    room_page.show()
    teaching.notice(
        "the class predicts before the model answers: students choose on their laptops, the projector "
        "tallies, and the truth comes from the live model at reveal, never from the lecture file."
    )
    room_page.show_more()
