"""Rules every page script keeps, found by walking each page's syntax tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT

from txviz.app import navigation

SCRIPTS = [ROOT / "app.py", *navigation.PAGE_FILES]
QUIET = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)  # what Streamlit's magic leaves alone


def docstrings(tree: ast.Module) -> set[ast.AST]:
    """The docstring statements of the module, its classes and its functions."""
    owners = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef | ast.FunctionDef))]
    return {
        owner.body[0]
        for owner in owners
        if owner.body
        and isinstance(owner.body[0], ast.Expr)
        and isinstance(owner.body[0].value, ast.Constant)
        and isinstance(owner.body[0].value.value, str)
    }


def bare_expressions(script: Path) -> list[str]:
    """Expression statements that Streamlit's magic would write onto the page, as 'file:line: code'."""
    source = script.read_text()
    tree = ast.parse(source)
    allowed = docstrings(tree)
    return [
        f"{script.name}:{node.lineno}: {ast.get_source_segment(source, node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and not isinstance(node.value, QUIET) and node not in allowed
    ]


def test_pages_are_discovered() -> None:
    assert len(SCRIPTS) > 10 and all(script.exists() for script in SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_bare_expression_statements(script: Path) -> None:
    """A bare expression (a tuple of calls, a name) is written out by magic: call or assign instead."""
    assert bare_expressions(script) == []


def test_the_rule_sees_a_tuple_of_calls(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text('"""Doc."""\n\ndef f():\n    """Doc."""\n\na.empty(), b.empty()\nf()\nx\n')
    assert bare_expressions(page) == ["page.py:6: a.empty(), b.empty()", "page.py:8: x"]
