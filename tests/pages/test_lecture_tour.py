"""The guided tour: start a lecture, answer and reveal, move on, survive a reload, and get a score."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

from txviz import page_map
from txviz.app.lecture import tour
from txviz.lecture.files import load_lecture

LECTURE = """title: A short tour
model: minilm
steps:
  - title: By hand
    page: Self_Attention
    settings: {view: "Several heads", n_heads: 4}
    points: [Heads split the dimensions.]
    question: {kind: choice, prompt: "How many heads?", options: ["1", "4"], answer: "4"}
  - title: A real head
    page: Positional_Encoding
    settings: {view: Binary}
    points: [Bits flip at different rates.]
    question:
      kind: attends_to
      prompt: "Where does 'it' look?"
      text: "The cat sat because it was warm."
      layer: 3
      head: 1
      word: it
      hide_special: true
  - title: Why attention
    page: Why_Attention
    settings: {view: Cost}
    points: [Attention does every position at once.]
"""


@pytest.fixture
def short_tour(tmp_path, monkeypatch):
    path = tmp_path / "short.yaml"
    path.write_text(LECTURE)
    lecture = load_lecture(path)
    monkeypatch.setattr(tour, "lectures", lambda: {"short": lecture})
    return lecture


def follow(app: AppTest, lecture) -> AppTest:
    """Stay on the page the tour switched to (AppTest reruns the page it was last told to open)."""
    return app.switch_page(page_map.page(lecture.steps[app.session_state["_tour"]["step"]].page).file)


def bar_text(app: AppTest) -> str:
    return " ".join(m.value for m in app.main.markdown) + " ".join(c.value for c in app.main.caption)


def test_a_tour_runs_from_start_to_score(short_tour):
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240).run()
    app.switch_page("pages/20_Lectures.py").run()
    assert_clean(app)
    assert app.main.selectbox(key="lecture").value == "short"
    app.button(key="start_tour").click().run()
    assert_clean(app)
    follow(app, short_tour)
    assert app.session_state["view"] == "Several heads" and app.session_state["n_heads"] == 4
    assert "step 1 of 3" in bar_text(app) and "Heads split the dimensions." in bar_text(app)
    assert app.query_params["tour"] == "short" and app.query_params["tour_step"] == "1"
    assert app.button(key="_tour_prev").disabled
    assert "Start here" not in bar_text(app)  # one sequence at a time: the tour's bar, not the path strip

    app.radio(key="_tour_q_short_0_pick").set_value(1).run()
    app.button(key="_tour_q_short_0_lock").click().run()
    assert_clean(app)
    assert [s.value for s in app.success][0].startswith("Right.")

    app.button(key="_tour_next").click().run()
    assert_clean(app)
    follow(app, short_tour)
    assert app.session_state["view"] == "Binary" and "step 2 of 3" in bar_text(app)
    labels = [option.content for option in app.get("button_group")[0].proto.options]
    assert labels == ["the", "cat", "sat", "because", "it", "was", "warm", "."]  # no [CLS] or [SEP]
    app.session_state["_tour_q_short_1_pick"] = 1  # 'the': not where the head sends 'it'
    app.run()
    app.button(key="_tour_q_short_1_lock").click().run()
    assert_clean(app)
    assert any(w.value.startswith("Not this time. minilm says") for w in app.warning)

    app.button(key="_tour_next").click().run()
    follow(app, short_tour)
    assert app.session_state["view"] == "Cost"
    app.button(key="_tour_finish").click().run()
    assert_clean(app)
    (score,) = app.metric
    assert score.value == "1 of 2"
    app.button(key="_tour_again").click().run()
    follow(app, short_tour).run()
    assert_clean(app)
    assert "step 1 of 3" in bar_text(app) and not app.success  # asked afresh
    assert app.button(key="_tour_q_short_0_lock").disabled  # nothing picked yet
    app.button(key="_tour_next").click().run()
    follow(app, short_tour).run()
    app.button(key="_tour_next").click().run()
    follow(app, short_tour).run()
    app.button(key="_tour_finish").click().run()
    assert app.metric[0].value == "0 of 2"
    app.button(key="_tour_leave").click().run()
    assert_clean(app)
    assert "tour" not in app.query_params and "_tour" not in app.session_state


def test_a_reload_resumes_the_tour_at_its_step(short_tour):
    app = AppTest.from_file(str(ROOT / "pages/3_Positional_Encoding.py"), default_timeout=120)
    app.query_params.update({"tour": "short", "tour_step": "2", "view": json.dumps("Binary")})
    app.run()
    assert_clean(app)
    assert "step 2 of 3" in bar_text(app) and "Bits flip at different rates." in bar_text(app)
    assert app.session_state["_tour"]["step"] == 1


def test_a_learner_who_wanders_off_gets_back_to_the_step(short_tour):
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240).run()
    app.switch_page("pages/20_Lectures.py").run()
    app.button(key="start_tour").click().run()
    follow(app, short_tour).run()
    app.slider(key="n_tokens").set_value(5).run()  # explore the step's page
    app.switch_page("pages/14_Why_Attention.py").run()  # and wander to another
    assert_clean(app)
    assert "step 1 of 3" in bar_text(app)
    app.button(key="_tour_back").click().run()
    follow(app, short_tour).run()
    assert_clean(app)
    assert app.session_state["view"] == "Several heads" and app.session_state["n_heads"] == 4
    assert app.session_state["n_tokens"] != 5  # the step's own settings, not the wanderer's
    assert "_tour_back" not in [b.key for b in app.button]  # on the step's page: nothing to go back to


@pytest.mark.parametrize(
    "bad", [{"tour": "nope"}, {"tour": "short", "tour_step": "x"}, {"tour": "short", "tour_step": "99"}]
)
def test_a_bad_tour_link_is_ignored_or_clamped(short_tour, bad):
    app = AppTest.from_file(str(ROOT / "pages/14_Why_Attention.py"), default_timeout=120)
    app.query_params.update(bad)
    app.run()
    assert_clean(app, bad)
    if bad["tour"] == "nope":
        assert "_tour" not in app.session_state
    else:
        assert app.session_state["_tour"]["step"] in (0, 2)


def test_another_model_answers_the_questions_when_chosen(short_tour):
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    app.switch_page("pages/20_Lectures.py").run()
    app.selectbox(key="tour_model").set_value("smollm2").run()
    app.button(key="start_tour").click().run()
    follow(app, short_tour).run()
    app.button(key="_tour_next").click().run()
    follow(app, short_tour).run()
    assert_clean(app)
    labels = [option.content for option in app.get("button_group")[0].proto.options]
    assert labels[0] == "The"  # SmolLM2's own tokens of the text (MiniLM's are lower case)
    app.session_state["_tour_q_short_1_pick"] = 0
    app.run()
    app.button(key="_tour_q_short_1_lock").click().run()
    assert_clean(app)
    said = [m.value for m in (*app.success, *app.warning)]
    assert len(said) == 1 and "smollm2 says" in said[0]
