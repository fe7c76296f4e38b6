"""The Interventions page under AppTest: every tab's widgets moved, bad input, links in and out."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from conftest import ROOT, click_grid
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "18_Interventions.py")
TIMEOUT = 600  # SmolLM2 on a shared CPU: a sweep is 300 batch rows
CLEAN, CORRUPT = "Mary gave it to", "John gave it to"  # four tokens each keep the grids quick


def fresh(state: dict | None = None, **params) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params.update({k: json.dumps(v) for k, v in params.items()})
    for key, value in (state or {}).items():
        at.session_state[key] = value
    return at.run()


def ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_ablating_a_head_an_mlp_and_an_edge(smollm2):
    at = fresh()
    ok(at)
    assert [m.label for m in at.metric][1] == "after"
    at.number_input(key="iv_layer").set_value(3).run()
    at.number_input(key="iv_head").set_value(4).run()
    ok(at)
    assert at.query_params["iv_layer"] == "3"
    at.selectbox(key="mode").set_value("mean").run()
    ok(at)
    at.selectbox(key="target").set_value("MLP").run()
    ok(at)
    at.selectbox(key="target").set_value("attention edge").run()
    ok(at)
    at.selectbox(key="metric").set_value("probability").run()
    ok(at)
    assert "print(json.dumps" in at.main.code[-1].value  # the exported script (the sidebar holds the link)


def test_bad_input_speaks_to_the_user(smollm2):
    at = fresh()
    at.text_input(key="answer").set_value(" Mary Ann").run()
    assert not at.exception
    assert any("first token" in i.value for i in at.info)
    at.text_input(key="answer").set_value("").run()
    assert not at.exception and any("empty" in e.value for e in at.error)
    at = fresh()
    at.text_area(key="text").set_value("   ").run()
    assert not at.exception and any("empty" in w.value for w in at.warning)


def test_a_test_this_head_link_opens_the_head_ablated(smollm2):
    at = fresh(
        model="smollm2",
        text="The capital of France is",
        answer=" Paris",
        target="head",
        iv_layer=2,
        iv_head=5,
    )
    ok(at)
    assert (at.number_input(key="iv_layer").value, at.number_input(key="iv_head").value) == (2, 5)
    assert at.text_area(key="text").value == "The capital of France is"


def test_the_models_own_answer_is_one_queued_forward_however_often_the_page_reruns(smollm2, monkeypatch):
    """A "test this head" link gives no answer: the likeliest next token is found once, in the queue."""
    from txviz.app import sessions
    from txviz.interventions import runs

    calls = []

    def counted(loaded, text):
        calls.append(getattr(sessions._inside_job, "held", False))  # True: in the heavy-job queue
        return top_next_token(loaded, text)

    top_next_token = runs.top_next_token
    monkeypatch.setattr(runs, "top_next_token", counted)
    text = "The capital of Italy is"  # no other test asks for this one's answer
    at = fresh(
        model="smollm2", text=text, answer="", metric="log_probability", target="head", iv_layer=1, iv_head=2
    )
    ok(at)
    assert any("likeliest next token" in i.value for i in at.info)
    at.selectbox(key="mode").set_value("mean").run()
    at.number_input(key="iv_head").set_value(3).run()
    ok(at)
    assert calls == [True]


def open_tab(at: AppTest, view: str, **state) -> AppTest:
    """Switch tabs as a click does, keeping everything typed so far."""
    at.session_state["iv_view"] = view
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_patching_and_sweep_tabs(smollm2):
    at = fresh()
    at.text_area(key="text").set_value(CLEAN).run()  # typed in Ablate: Patch reads it as its clean prompt
    at = open_tab(at, "Patch", corrupt=CORRUPT, patch_go=True)
    ok(at)
    assert any("rank correlation" in c.value for c in at.caption)
    (link,) = at.get("page_link")
    assert link.proto.page.endswith("Attention_Explorer")
    assert json.loads(parse_qs(link.proto.query_string)["text"][0]) == CLEAN
    at = click_grid(at, "patch_heads", 2, 5)  # a click on the exact grid opens that head
    ok(at)
    (link,) = at.get("page_link")
    assert (
        json.loads(parse_qs(link.proto.query_string)["layer"][0]),
        json.loads(parse_qs(link.proto.query_string)["head"][0]),
    ) == (2, 5)
    at.text_area(key="corrupt").set_value("John gave it to the").run()
    assert not at.exception and any("same number of tokens" in e.value for e in at.error)


def test_a_new_prompt_brings_its_own_answers_and_corrupted_prompt_to_the_patch_tab(smollm2):
    at = open_tab(fresh(), "Patch")
    ok(at)
    assert (at.text_input(key="answer_patch").value, at.text_input(key="wrong_patch").value) == (
        " Mary",
        " John",
    )
    at.text_area(key="text").set_value("The capital of France is").run()
    ok(at)  # not the 14-token corrupted prompt of Mary and John against these 5 tokens, in red
    assert at.text_area(key="corrupt").value == "The capital of France is"
    answer, wrong = at.text_input(key="answer_patch").value, at.text_input(key="wrong_patch").value
    assert answer == " Paris" and wrong not in ("", " John", answer)  # the model's first and second choice
    assert any("change one word" in i.value for i in at.info)
    assert json.loads(at.query_params["answer"]) == " Paris"  # a link taken now carries the new answers
    at.text_area(key="corrupt").set_value("The capital of Italy is").run()
    at.toggle(key="patch_go").set_value(True).run()
    ok(at)
    label = f"logit('{answer.strip()}') - logit('{wrong.strip()}')"  # readable tokens, spaces left out
    assert any(c.value.startswith(label) for c in at.caption)


def test_sweep_and_steer_tabs(smollm2):
    at = fresh()
    at.text_area(key="text").set_value(CLEAN).run()  # typed in Ablate: Every head sweeps the same prompt
    at = open_tab(at, "Every head", sweep_go=True)
    ok(at)
    assert any("with nothing ablated" in c.value for c in at.caption)
    assert repr(CLEAN) in at.main.code[-1].value  # the exported sweep script
    at = click_grid(at, "sweep_heads", 3, 4)  # the clicked head is the one the Ablate tab ablates
    ok(at)
    assert (at.session_state["iv_layer"], at.session_state["iv_head"]) == (3, 4)
    at = fresh({"iv_view": "Steer", "steer_new": 4, "strength": 0.0})
    ok(at)
    assert any("continues a prompt of its own" in c.value for c in at.caption)
    at.button(key="steer_go").click().run()
    plain, steered = at.main.code[0].value, at.main.code[1].value
    assert plain == steered  # strength 0 is the plain run
    at.slider(key="strength").set_value(8.0).run()
    ok(at)


def test_every_tab_speaks_about_a_bad_prompt_before_its_toggle(smollm2):
    at = fresh({"iv_view": "Every head", "text": ""})
    assert not at.exception and any("text is empty" in w.value for w in at.warning)
    at = fresh({"iv_view": "Patch", "text": CLEAN, "corrupt": "John gave it " * 200})
    assert not at.exception and any("corrupted prompt has" in e.value for e in at.error)
    at = fresh({"iv_view": "Steer", "steer_new": 1, "steer_prompt": "The movie was fine. " * 100})
    ok(at)
    at.button(key="steer_go").click().run()
    assert any("only its first 256 are kept" in w.value for w in at.warning)
    assert at.code[0].value.startswith("The movie was fine.") and len(at.code[0].value) < 1500


def test_head_detectors_link_opens_this_page_with_the_head_ablated(smollm2):
    detectors = AppTest.from_file(str(ROOT / "pages" / "16_Head_Detectors.py"), default_timeout=TIMEOUT)
    detectors.query_params["model"] = json.dumps("smollm2")
    detectors.session_state["rep_n"], detectors.session_state["rep_len"] = 1, 6
    detectors.session_state["pick_layer"], detectors.session_state["pick_head"] = 4, 2
    detectors.run()
    assert not detectors.exception
    (link,) = [p for p in detectors.get("page_link") if p.proto.page.endswith("Interventions")]
    params = {k: v[0] for k, v in parse_qs(link.proto.query_string).items()}
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.query_params.update(params)
    at.run()
    ok(at)
    assert (at.number_input(key="iv_layer").value, at.number_input(key="iv_head").value) == (4, 2)
    assert at.selectbox(key="metric").value == "log_probability"
    assert any("likeliest next token" in i.value for i in at.info)  # no answer in the link: the model's own


def test_steer_runs_only_on_its_button_and_its_default_visibly_steers(smollm2):
    at = fresh({"iv_view": "Steer"})
    ok(at)
    assert not at.main.code and any("Press the button" in c.value for c in at.caption)  # nothing generated
    at.button(key="steer_go").click().run()
    ok(at)
    plain, steered = at.main.code[0].value, at.main.code[1].value
    assert plain.startswith("I think the movie was") and steered != plain
    at.run()  # a rerun with the same settings keeps the result
    assert len(at.main.code) >= 2
    at.slider(key="strength").set_value(2.0).run()  # new settings wait for the button again
    ok(at)
    assert not at.main.code


def test_steer_tells_its_progress_and_the_time_left(smollm2, monkeypatch):
    """The two generations run on the button under a progress bar that says how long is left."""
    from txviz.app import ui
    from txviz.interventions import steering

    told = []
    steer = steering.steer

    def watched(*args, progress=None, **kwargs):
        assert progress is not None, "Steer runs without a progress bar"
        return steer(*args, progress=lambda f, text: told.append(text) or progress(f, text), **kwargs)

    monkeypatch.setattr(steering, "steer", watched)
    ui.clear_cached()
    at = fresh({"iv_view": "Steer", "steer_new": 2})
    ok(at)
    assert not told  # nothing before the button
    at.button(key="steer_go").click().run()
    ok(at)
    assert len(at.main.code) >= 2 and told and all(t.endswith(" left") for t in told)
