"""A headless session says where a browser would stop: the frontend's check of each element's place,
replayed on the message sequences that froze the projector window."""

from __future__ import annotations

from txviz.app.lecture.placement import Places

OLD, NEW = "page-3", "page-4"


def _page(places: Places, page: str, paths) -> Places:
    places.new_session(page, fragment_run=False)
    places.navigation(page)
    for path in paths:
        places.delta(path)
    return places


def test_a_page_drawn_in_order_is_placed():
    places = _page(Places(), OLD, [[0, 0], [0, 0, 0], [0, 0, 1], [0, 1], [1, 0], [0, 2], [0, 1, 0]])
    assert places.stopped is None
    assert places.children[(0,)] == 3 and places.children[(0, 0)] == 2


def test_an_element_after_a_gap_stops_the_browser():
    """The projector window's freeze: the new page's run lost its bar (index 1), then sent index 2."""
    places = _page(Places(), OLD, [[0, 0], [0, 1], [0, 2]])
    _page(places, NEW, [[0, 0], [0, 2]])  # another page: the browser emptied its page first
    assert places.stopped == "Bad delta path index 2 (should be between [0, 1]) at [0, 2]"


def test_an_element_inside_a_block_never_sent_stops_the_browser():
    places = _page(Places(), OLD, [[0, 0], [0, 1, 0]])
    assert places.stopped and "index 1" in places.stopped


def test_a_fragment_run_naming_the_page_left_empties_the_page_and_stops():
    """A stale timer's rerun announced the old page: the browser empties the page, then cannot place the
    bar's elements (what the fragment guard prevents)."""
    places = _page(Places(), OLD, [[0, 0], [0, 1], [0, 2]])
    _page(places, NEW, [[0, 0], [0, 1], [0, 2]])
    places.new_session(OLD, fragment_run=True)
    places.delta([0, 1, 0])
    assert places.stopped and "index 1 (should be between [0, 0])" in places.stopped


def test_a_fragment_run_on_the_page_shown_redraws_in_place():
    places = _page(Places(), NEW, [[0, 0], [0, 1], [0, 2]])
    places.new_session(NEW, fragment_run=True)
    for path in ([0, 1], [0, 1, 0], [0, 1, 1]):
        places.delta(path)
    assert places.stopped is None and places.page == NEW
