"""Live Generation's 'Why this token?': the step-score strip and the inspector, every widget moved."""

from __future__ import annotations

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

PAGE = str(ROOT / "pages" / "8_Live_Generation.py")
TIMEOUT = 300


def chart_titles(at: AppTest) -> str:
    return " ".join(str(c.proto.spec) for c in at.get("plotly_chart"))


def test_the_inspector_explains_the_chosen_step_on_demand(smollm2):
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    at.text_area(key="gen_prompt").input("The capital of France is")
    at.number_input(key="gen_max").set_value(3)
    at.button(key="gen_go").click().run()
    assert_clean(at)
    assert "How sure the model was at every step" in chart_titles(at)
    assert "Logit lens" not in chart_titles(at)  # closed: nothing computed
    at.toggle(key="gen_explain").set_value(True).run()
    assert_clean(at)
    assert "Logit lens" in chart_titles(at) and "rank the tokens alike" in chart_titles(at)
    at.slider(key="gen_step").set_value(1).run()
    assert_clean(at)
    step = at.session_state["generation"]["steps"][1]
    alternative = next(i for i in step.candidates.ids if i != step.token_id)
    at.selectbox(key="gen_explain_alt").set_value(alternative).run()
    assert_clean(at)
    assert "logit(" in chart_titles(at)
    at.multiselect(key="gen_explain_methods").set_value(["gradient", "ablation"]).run()
    assert_clean(at)
    at.selectbox(key="gen_layer").set_value(2).run()
    at.selectbox(key="gen_head").set_value(1).run()
    assert_clean(at)
    assert "layer 2 head 1" in chart_titles(at)
    at.multiselect(key="gen_explain_methods").set_value([]).run()
    assert_clean(at)
    assert any("at least one" in i.value for i in at.info)


def test_explaining_a_step_tells_its_progress_and_the_time_left(smollm2, monkeypatch):
    """The attribution runs under a progress bar in forward passes, with the time left, not a spinner."""
    from txviz.app import ui
    from txviz.explain import views as explain_view

    told = []
    explain = explain_view.explain_attribution

    def watched(*args, progress=None, **kwargs):
        assert progress is not None, "the attribution runs without a progress bar"
        return explain(*args, progress=lambda f, text: told.append((f, text)) or progress(f, text), **kwargs)

    monkeypatch.setattr(explain_view, "explain_attribution", watched)
    ui.clear_cached()
    at = AppTest.from_file(PAGE, default_timeout=TIMEOUT)
    at.run()
    at.text_area(key="gen_prompt").input("The capital of France is")
    at.number_input(key="gen_max").set_value(2)
    at.button(key="gen_go").click().run()
    assert not told  # nothing before the switch
    at.toggle(key="gen_explain").set_value(True).run()
    assert_clean(at)
    assert told and told[-1][0] == 1.0 and all(text.endswith(" left") for _, text in told)
