"""The grammar model's tab, drawn by txviz.grammar.views.show in a one-function app."""

from conftest import assert_clean
from streamlit.testing.v1 import AppTest


def grammar_tab():
    from txviz.grammar import views

    views.show()


def test_every_task_draws_its_output_and_cross_attention():
    at = AppTest.from_function(grammar_tab, default_timeout=120).run()
    assert_clean(at, "first run")
    assert at.dataframe and any("Output" in m.value for m in at.markdown)
    for prefix in ("parse:", "tag:", "count:", "translate:"):
        at.selectbox(key="grammar_task").set_value(prefix).run()
        assert_clean(at, prefix)
        assert any(
            "grammar's own answer" in c.value or "The grammar's French" in c.value for c in at.caption
        ), prefix
    assert any("puts" in m.value for m in at.markdown)  # the pronoun's note under the translation
    at.text_input(key="grammar_text_translate").set_value(
        "the cow liked the bridge because it was wide"
    ).run()
    assert_clean(at, "a typed translation")
    at.toggle(key="grammar_mean").set_value(True).run()
    assert_clean(at, "mean over heads")
    at.slider(key="grammar_layer").set_value(1).run()
    assert_clean(at, "layer 1")


def test_a_sentence_outside_the_grammar_says_why():
    at = AppTest.from_function(grammar_tab, default_timeout=120).run()
    at.text_input(key="grammar_text_parse").set_value("the dog chased").run()
    assert not at.exception
    assert at.error and "expected one of" in at.error[0].value
