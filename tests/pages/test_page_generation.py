"""The Live Generation page: AppTest runs, bad input messages, and a browser that watches tokens."""

from __future__ import annotations

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "8_Live_Generation.py")
TIMEOUT = 300  # a first SmolLM2 load converts it; the CPU is shared


def fresh() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    assert_clean(at)
    return at


def generate_tokens(at: AppTest, prompt: str, n: int = 3, **numbers) -> AppTest:
    at.text_area(key="gen_prompt").input(prompt)
    at.number_input(key="gen_max").set_value(n)
    for key, value in numbers.items():
        at.number_input(key=key).set_value(value)
    at.button(key="gen_go").click().run()
    return at


def errors(at: AppTest) -> str:
    return " ".join(e.value for e in at.error)


def test_page_generates_tokens_and_replays_them(smollm2):
    at = generate_tokens(fresh(), "The capital of France is", n=3)
    assert_clean(at)
    run = at.session_state["generation"]
    assert len(run["steps"]) == 3 and run["done"] and not run["stopped"]
    shown = at.code[0].value
    assert shown.endswith(run["steps"][-1].text) and "The capital of France is" in shown
    assert [m.label for m in at.metric][:3] == ["Tokens made", "Tokens / s", "Device"]
    assert at.metric[0].value == "3"
    # replay: move the step slider and the layer and head pickers
    at.slider(key="gen_step").set_value(0).run()
    at.selectbox(key="gen_layer").set_value(3).run()
    at.selectbox(key="gen_head").set_value(8).run()
    assert_clean(at)
    assert "Step 0 chose" in " ".join(t.value for t in at.text)
    # a rerun (any click) keeps what was generated
    at.slider(key="gen_temperature").set_value(0.8).run()
    assert len(at.session_state["generation"]["steps"]) == 3


def test_seeded_sampling_in_the_page_repeats(smollm2):
    first = fresh()
    first.slider(key="gen_temperature").set_value(1.2)
    generate_tokens(first, "Once upon a time", n=4, gen_seed=7, gen_top_k=20)
    again = fresh()
    again.slider(key="gen_temperature").set_value(1.2)
    generate_tokens(again, "Once upon a time", n=4, gen_seed=7, gen_top_k=20)
    ids = [[s.token_id for s in at.session_state["generation"]["steps"]] for at in (first, again)]
    assert ids[0] == ids[1] and len(ids[0]) == 4
    assert_clean(first)
    assert_clean(again)


BAD_INPUT = [
    ("", {}, "prompt is empty"),
    ("Hello", {"gen_max": 0}, "at least 1"),
    ("Hello", {"gen_max": 100_000}, "at most 512"),
    (" 7" * 9000, {"gen_max": 8}, "shorten it"),
]


def test_bad_input_gives_a_clear_message(smollm2):
    at = fresh()
    for prompt, numbers, message in BAD_INPUT:
        at.text_area(key="gen_prompt").input(prompt)
        for key, value in numbers.items():
            at.number_input(key=key).set_value(value)
        at.button(key="gen_go").click().run()
        assert not at.exception, at.exception
        assert message in errors(at), (message, errors(at))
        assert "generation" not in at.session_state


def test_temperature_zero_says_filters_wait_and_runs_greedy(smollm2):
    at = fresh()
    at.number_input(key="gen_top_k").set_value(5)
    at.run()
    assert any("Temperature 0 is greedy" in c.value for c in at.caption)
    generate_tokens(at, "The capital of France is", n=2)
    steps = at.session_state["generation"]["steps"]
    assert all(s.candidates.stages == ("model", "greedy") for s in steps)
    assert_clean(at)


def test_an_encoder_model_gets_a_clear_message(minilm):
    at = fresh()
    at.selectbox(key="gen_model").set_value("Other: a Hugging Face id or local folder...").run()
    at.text_input(key="gen_model_custom").input("minilm").run()
    assert not at.exception, at.exception
    assert "encoder" in errors(at) and "no next-token head" in errors(at)


# Browser: tokens appear in a real page, and two sessions at once keep their own.


def test_steering_shows_the_steered_text_beside_the_unsteered_one(smollm2):
    at = fresh()
    assert not any(t.key == "gen_steer_towards" for t in at.text_area)  # off by default: page unchanged
    at.toggle(key="gen_steer").set_value(True).run()
    assert_clean(at)
    at.slider(key="gen_steer_strength").set_value(0.0)
    generate_tokens(at, "I think the movie was", n=4)
    assert_clean(at)
    run = at.session_state["generation"]
    plain, steered = ([s.token_id for s in steps] for steps in (run["steps"], run["steered"]["steps"]))
    assert plain == steered and len(plain) == 4  # greedy, strength 0: the very same tokens
    assert at.code[0].value == at.code[1].value
    assert any("same tokens as the unsteered" in c.value for c in at.caption)
    at.slider(key="gen_steer_strength").set_value(8.0)
    at.button(key="gen_go").click().run()
    assert_clean(at)
    run = at.session_state["generation"]
    assert [s.token_id for s in run["steps"]] == plain  # the unsteered run is as before
    assert [s.token_id for s in run["steered"]["steps"]] != plain
    assert at.code[0].value != at.code[1].value
    assert any(c.value.startswith("Steered: + 8 x direction") for c in at.caption)
    # an empty prompt set: a clear message, and Generate starts nothing
    at.text_area(key="gen_steer_away").input(" \n ").run()
    at.button(key="gen_go").click().run()
    assert not at.exception, at.exception
    assert "second set of prompts is empty" in errors(at)
    assert at.session_state["generation"] is run


def in_page_order(node):
    """Every element under a node, as the page shows them top to bottom."""
    for _, child in sorted(getattr(node, "children", {}).items()):
        yield child
        yield from in_page_order(child)


def test_the_first_token_note_comes_before_the_charts_it_introduces(smollm2):
    at = fresh()
    shown = [(e.type, getattr(e, "value", "")) for e in in_page_order(at.main)]
    note = next(
        i for i, (kind, value) in enumerate(shown) if "candidates for the first new token" in str(value)
    )
    charts = [i for i, (kind, _) in enumerate(shown) if kind == "plotly_chart"]
    assert charts and note < charts[0]


def test_a_preview_overtaken_by_newer_settings_ends_quietly(smollm2, monkeypatch):
    """Settings changed while the first-token preview waits: with fast reruns the newer run of the same
    session submits while the older one still waits, and the engine cancels the older request."""
    from txviz.generation.batching import GenerationEngine

    submit, newer = GenerationEngine.submit, []

    def overtaken(self, request, owner=""):
        with self._changed:  # held across both: the decode loop cannot take the first before the second comes
            ticket = submit(self, request, owner)
            if request.max_new_tokens == 1 and not newer:
                newer.append(submit(self, request, owner))  # the newer run's preview, same session
        return ticket

    monkeypatch.setattr(GenerationEngine, "submit", overtaken)
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    try:
        at.run()
    finally:
        for ticket in newer:
            list(ticket.steps())  # its one step: the engine's thread is idle again when the test ends
    assert len(newer) == 1  # the race happened
    assert_clean(at)  # no StopIteration: the overtaken run stops, the newer one draws the preview
    assert any("candidates for the first new token" in i.value for i in at.info)
