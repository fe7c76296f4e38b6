"""Lecture files: every shipped one loads; a malformed one is refused with a message naming the bad step."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from txviz import page_map
from txviz.lecture.files import LectureError, load_lecture, shipped_lectures
from txviz.lecture.questions import KINDS

GOOD_STEP = """
  - title: One head
    page: Attention_Explorer
    settings: {model: minilm, layer: 3, head: 1, view: One head}
    points: [Rows are queries.]
"""


def write(tmp_path: Path, steps: str, head: str = "title: A test\nmodel: minilm\n") -> Path:
    path = tmp_path / "lecture.yaml"
    path.write_text(head + "steps:\n" + steps)
    return path


def test_a_good_file_loads_with_its_settings_as_the_widgets_hold_them(tmp_path):
    lecture = load_lecture(write(tmp_path, GOOD_STEP))
    (step,) = lecture.steps
    assert lecture.name == "lecture" and lecture.model == "minilm"
    assert step.query_params() == {"model": '"minilm"', "layer": "3", "head": "1", "view": '"One head"'}
    assert step.settings == {"model": "minilm", "layer": 3, "head": 1, "view": "One head"}
    url = urlsplit(step.url())
    assert url.path == "Attention_Explorer"  # relative: it keeps the server's base path
    assert {k: json.loads(v) for k, v in parse_qsl(url.query)} == step.settings


@pytest.mark.parametrize(
    ("steps", "says"),
    [
        ("  - title: Nowhere\n    page: 99_Nowhere\n", ["step 2", "Nowhere", "unknown page '99_Nowhere'"]),
        (
            "  - title: Odd key\n    page: Attention_Explorer\n    settings: {colour: red}\n",
            ["step 2", "Odd key", "colour"],
        ),
        (
            "  - title: Q\n    page: Attention_Explorer\n    question: {kind: choice, prompt: 'Why?', options: [a, b]}\n",
            ["step 2", "no answer rule", "answer"],
        ),
        (
            "  - title: Q\n    page: Attention_Explorer\n    question: {kind: attends_to, prompt: 'Where?', text: Hi there}\n",
            ["step 2", "no answer rule", "layer", "head", "word"],
        ),
        (
            "  - title: Q\n    page: Attention_Explorer\n    question: {kind: number, prompt: 'P?', text: Hi, measure: probability}\n",
            ["step 2", "no answer rule", "low"],
        ),
        (
            "  - title: Q\n    page: Attention_Explorer\n    question: {kind: next_token, prompt: 'Next?', text: Hi, answer: 1}\n",
            ["step 2", "live model"],
        ),
        (
            "  - title: Q\n    page: Attention_Explorer\n    question: {kind: guess, prompt: x}\n",
            ["step 2", "kind"],
        ),
        ("  - title: [unclosed\n", ["not valid YAML"]),
        ("  - title: Typo\n    page: Attention_Explorer\n    point: [x]\n", ["step 2", "no field point"]),
        (
            "  - title: Q\n    page: Attention_Explorer\n    question: {kind: attends_to, prompt: 'W?', text: Hi, layr: 1, head: 0, layer: 0, word: hi}\n",
            ["step 2", "no field layr"],
        ),
        (
            "  - title: Q\n    page: Attention_Explorer\n    question: {kind: choice, prompt: 'W?', options: [a], answer: a}\n",
            ["step 2", "two options"],
        ),
    ],
)
def test_a_malformed_file_names_its_bad_step(tmp_path, steps, says):
    with pytest.raises(LectureError) as error:
        load_lecture(write(tmp_path, GOOD_STEP + steps))
    for words in says:
        assert words in str(error.value), (words, str(error.value))


def test_a_file_with_no_steps_or_no_title_is_refused(tmp_path):
    with pytest.raises(LectureError, match="steps"):
        load_lecture(write(tmp_path, " []\n"))
    with pytest.raises(LectureError, match="no title"):
        load_lecture(write(tmp_path, GOOD_STEP, head="model: minilm\n"))
    with pytest.raises(LectureError, match="no field modle"):
        load_lecture(write(tmp_path, GOOD_STEP, head="title: T\nmodle: minilm\n"))


def test_pattern_keys_and_the_projector_key_are_known(tmp_path):
    steps = "  - title: Pairs\n    page: Coreference\n    settings: {'layer_x@minilm': 2, present: true}\n"
    assert load_lecture(write(tmp_path, steps)).steps[0].settings["layer_x@minilm"] == 2


def test_an_unknown_or_mistyped_setting_fails_at_load_with_the_pages_real_settings(tmp_path):
    typo = "  - title: Typo\n    page: Soft_vs_Hard\n    settings: {temprature: 2.0}\n"
    with pytest.raises(LectureError) as error:
        load_lecture(write(tmp_path, GOOD_STEP + typo))
    said = str(error.value)
    assert "step 2" in said and "Soft_vs_Hard keeps no setting temprature" in said
    for setting in page_map.page("Soft_vs_Hard").settings:  # every real one listed, with its type
        assert str(setting) in said, setting
    wrong_type = "  - title: Typed\n    page: Soft_vs_Hard\n    settings: {temperature: hot}\n"
    with pytest.raises(
        LectureError, match="setting temperature is a float, not 'hot'; its settings are model"
    ):
        load_lecture(write(tmp_path, GOOD_STEP + wrong_type))


def test_a_page_is_named_as_the_map_names_it(tmp_path):
    old_spelling = "  - title: Stem\n    page: 2_Attention_Explorer\n"
    with pytest.raises(LectureError, match="unknown page '2_Attention_Explorer'; pages are Course_Map"):
        load_lecture(write(tmp_path, GOOD_STEP + old_spelling))


def test_shipped_lectures_are_complete():
    lectures = shipped_lectures()
    assert len(lectures) >= 2
    kinds = set()
    for lecture in lectures.values():
        kinds |= {q.kind for _, q in lecture.questions()}
        for step in lecture.steps:
            assert step.points, (lecture.name, step.title)
    big = [lecture for lecture in lectures.values() if 12 <= len(lecture.steps) <= 20]
    assert len(big) >= 2, "two full lectures of 12-20 steps"
    assert kinds == set(KINDS), "questions of every kind"
