"""`bench pages`: the child's JSON read, the table row and the last line written and read back (no timing)."""

from __future__ import annotations

import json

import pytest

from txviz.bench import pages


def child_output(page: str, cold: float | None, warm: float | None, runs=(20.0, 1.0)) -> str:
    data = {
        "page": page,
        "cold": {"figure_s": cold, "run_s": runs[0], "errors": []},
        "warm": {"figure_s": warm, "run_s": runs[1], "errors": []},
    }
    return "a log line\n" + json.dumps(data) + "\n"


def test_the_childs_last_json_line_is_read():
    found = pages.parse_child(child_output("Coreference", 12.345, 0.5), load=0.42)
    assert found == pages.PageTime("Coreference", 12.345, 0.5, True, 0.42)
    assert found.meets_goal
    assert pages.row(found) == "| Coreference | 0.42 | 12.35 | 0.50 | yes |"


def test_a_page_without_a_figure_reports_its_whole_runs():
    found = pages.parse_child(child_output("Lectures", None, None, runs=(16.0, 2.0)), load=1.5)
    assert (found.cold_s, found.warm_s, found.figure) == (16.0, 2.0, False)
    assert not found.meets_goal  # cold past 15 s
    assert pages.row(found).endswith("| no (no figure: whole run) |")


def test_the_last_line_names_the_slowest_page_of_each_and_reads_back():
    times = [
        pages.PageTime("Tokenization", 4.0, 0.25, True, 0.5),
        pages.PageTime("Head_Atlas", 30.125, 1.0, True, 0.5),
        pages.PageTime("Interventions", 10.0, 2.5, True, 0.5),
    ]
    line = pages.summary(times)
    assert line == "slowest first figure: warm 2.50 s (Interventions), cold 30.12 s (Head_Atlas)"
    assert pages.parse_summary(line) == {
        "warm": 2.5,
        "warm_page": "Interventions",
        "cold": 30.12,
        "cold_page": "Head_Atlas",
    }
    with pytest.raises(ValueError):
        pages.parse_summary("slowest first figure: none measured")


def test_the_pages_are_the_page_maps_and_an_unknown_one_is_refused(capsys):
    from txviz import page_map

    assert pages.declared_pages() == [p.name for p in page_map.PAGES]
    assert pages.main(["--pages", "No_Such_Page"]) == 2
    assert "No_Such_Page" in capsys.readouterr().err
