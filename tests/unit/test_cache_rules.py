"""One cache: pages cache only through txviz.app.ui, and nothing in txviz memoises a LoadedModel.

A raw st.cache_* in a page can leave the device or model name out of its key; an lru_cache keyed by
a LoadedModel keeps an evicted model's weights alive. Both are found by walking the syntax tree.
"""

import ast
from pathlib import Path

from conftest import drawing_files

ROOT = Path(__file__).resolve().parents[2]
STREAMLIT_CACHES = {"cache_data", "cache_resource"}
FUNCTOOLS_CACHES = {"lru_cache", "cache"}
MODEL_ARGUMENTS = {"loaded", "_loaded"}  # the project's name for a LoadedModel argument


def dotted(node: ast.AST) -> str:
    """ "st.cache_data" for st.cache_data, "functools.lru_cache" for functools.lru_cache(...)."""
    if isinstance(node, ast.Call):
        return dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def is_functools_cache(name: str, imported: set[str]) -> bool:
    return name in {f"functools.{n}" for n in FUNCTOOLS_CACHES} or name in imported


def page_problems(source: str, where: str = "page") -> list[str]:
    """Every raw cache a page uses: st.cache_data, st.cache_resource, lru_cache, functools.cache."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in ("functools", "streamlit"):
            found = {a.name for a in node.names} & (FUNCTOOLS_CACHES | STREAMLIT_CACHES)
            problems += [(node.lineno, f"imports {name}") for name in sorted(found)]
        elif isinstance(node, ast.Attribute) and (
            node.attr in STREAMLIT_CACHES or is_functools_cache(dotted(node), set())
        ):
            problems.append((node.lineno, f"uses {dotted(node)}"))
    return [f"{where}:{line} {what}" for line, what in sorted(problems)]


def takes_a_model(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    arguments = function.args.posonlyargs + function.args.args + function.args.kwonlyargs
    return any(
        a.arg in MODEL_ARGUMENTS or (a.annotation is not None and "LoadedModel" in ast.unparse(a.annotation))
        for a in arguments
    )


def model_cache_problems(source: str, where: str = "module") -> list[str]:
    """Every function taking a LoadedModel under a cache decorator (lru_cache, cache, st.cache_*)."""
    tree = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "functools"
        for alias in node.names
        if alias.name in FUNCTOOLS_CACHES
    }
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not takes_a_model(node):
            continue
        for decorator in map(dotted, node.decorator_list):
            if is_functools_cache(decorator, imported) or decorator.split(".")[-1] in STREAMLIT_CACHES:
                problems.append((node.lineno, f"{decorator} on {node.name}, which takes a model"))
    return [f"{where}:{line} {what}" for line, what in sorted(problems)]


def test_pages_cache_only_through_ui():
    """Pages, app.py and the topics' views (which draw the pages' tabs) cache through ui alone."""
    problems = [
        p
        for page in drawing_files()
        if "txviz/app/" not in page.as_posix()
        for p in page_problems(page.read_text(), page.relative_to(ROOT).as_posix())
    ]
    assert not problems, "cache through ui.cached / ui.shared_resource / ui.cached_data:\n" + "\n".join(
        problems
    )


def test_nothing_in_txviz_memoises_a_loaded_model():
    files = sorted((ROOT / "txviz").rglob("*.py"))
    problems = [p for f in files for p in model_cache_problems(f.read_text(), str(f.relative_to(ROOT)))]
    assert not problems, "\n".join(problems)


def test_the_page_rule_sees_every_raw_cache():
    source = """
import functools
from functools import lru_cache
import streamlit as st

@st.cache_data(max_entries=4)
def a(text): ...

@st.cache_resource
def b(): ...

@functools.cache
def c(): ...

st.cache_data.clear()
"""
    found = page_problems(source)
    assert [p.split(" ", 1)[1] for p in found] == [
        "imports lru_cache",
        "uses st.cache_data",
        "uses st.cache_resource",
        "uses functools.cache",
        "uses st.cache_data",
    ], found
    assert page_problems("from txviz.app import ui\n\n@ui.cached(spinner=False)\ndef a(loaded): ...\n") == []


def test_the_model_rule_sees_a_memoised_model_and_nothing_else():
    source = """
import functools
from functools import lru_cache as memo
import streamlit as st
from txviz.models import LoadedModel

@functools.lru_cache(maxsize=8)
def by_annotation(model: LoadedModel) -> tuple: ...

@memo
def by_name(loaded, n: int): ...

@st.cache_resource
def engine(name: str, _loaded): ...

@functools.cache
def compiled() -> object: ...

def plain(loaded): ...
"""
    found = model_cache_problems(source)
    assert [p.split(" on ")[1].split(",")[0] for p in found] == ["by_annotation", "by_name", "engine"], found


def unqueued_problems(source: str, where: str = "page") -> list[str]:
    """Every ``@ui.cached`` function without ``@ui.heavy`` right beneath it: its model work would skip
    the heavy-job queue (the cache decorator only caches)."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [dotted(d) for d in node.decorator_list]
        if "ui.cached" in names and names[names.index("ui.cached") + 1 : names.index("ui.cached") + 2] != [
            "ui.heavy"
        ]:
            problems.append(
                f"{where}:{node.lineno} {node.name} is cached but not queued: add @ui.heavy beneath"
            )
    return problems


def test_every_cached_model_job_takes_its_place_in_the_queue():
    problems = []
    for path in drawing_files():
        problems += unqueued_problems(path.read_text(), path.relative_to(ROOT).as_posix())
    assert not problems, "\n".join(problems)


def test_the_queue_rule_sees_a_cached_job_without_its_place():
    queued = "@ui.cached(spinner=False)\n@ui.heavy\ndef a(loaded): ...\n"
    bare = "@ui.cached(max_entries=4)\ndef b(loaded): ...\n"
    upside_down = "@ui.heavy\n@ui.cached()\ndef c(loaded): ...\n"
    assert unqueued_problems(queued) == []
    assert len(unqueued_problems(bare)) == 1 and len(unqueued_problems(upside_down)) == 1
