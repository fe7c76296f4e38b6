"""Every page says what to notice under its first figure, and the glossary's terms are defined on hover."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import page_files
from streamlit.testing.v1 import AppTest

from txviz.app import navigation, teaching


def teaching_calls(script: Path, name: str) -> list[ast.Call]:
    """The calls of teaching.<name>(...) in the script and the views that draw its tabs."""
    return [
        node
        for path in page_files(script)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "teaching"
    ]


def literal_text(node: ast.AST) -> str:
    """The constant text of a string argument (an f-string's literal parts)."""
    return " ".join(
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    )


@pytest.mark.parametrize("script", navigation.PAGE_FILES, ids=lambda p: p.stem)
def test_every_page_says_what_to_notice(script: Path):
    calls = teaching_calls(script, "notice")  # one line under the first figure (per state of the page)
    assert calls and all(len(literal_text(call.args[0])) > 40 for call in calls)


def test_the_home_page_has_no_notice():
    assert not teaching_calls(navigation.HOME_SCRIPT, "notice")


def test_every_glossary_term_is_defined_where_a_hover_reaches():
    reached = set()
    for script in navigation.PAGE_FILES:
        for call in teaching_calls(script, "notice"):
            reached.update(teaching.terms_in(literal_text(call.args[0])))
        for call in teaching_calls(script, "help_for"):
            reached.update(literal_text(arg) for arg in call.args)
    assert reached == set(teaching.GLOSSARY)


def test_terms_are_found_in_plural_and_any_case():
    assert teaching.terms_in("Heads, attention SINKS and the Logit lens") == ["head", "sink", "logit lens"]
    assert teaching.terms_in("a headline sinking") == []
    assert teaching.help_for() is None


def test_a_notice_defines_the_terms_it_mentions_on_hover():
    def page():
        from txviz.app import teaching

        teaching.notice("the entropy of each head's rows")

    at = AppTest.from_function(page).run()
    assert not at.exception
    (caption,) = at.caption
    assert caption.value == "**What to notice:** the entropy of each head's rows"
    assert caption.proto.help == teaching.help_for("head", "entropy")
    assert teaching.GLOSSARY["entropy"] in caption.proto.help and "rollout" not in caption.proto.help
