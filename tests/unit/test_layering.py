"""The layers of txviz/ hold: which package may import which, streamlit only in the app and the topics'
views, no cycles."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "txviz"
ROLES = {"core", "models", "figures", "app", "bench", "training", "cli", "__main__", "__init__"}
# What each layer may import from txviz (topic = any package not named in ROLES; views = a topic's
# ``views`` module or package: its tabs, drawn with Streamlit and the app's chrome, that pages list).
ALLOWED = {
    "core": {"core"},
    "models": {"core", "models"},
    "figures": {"core", "figures"},
    "topic": {"core", "models", "figures", "topic"},
    "app": {"core", "models", "figures", "topic", "app"},
    # A page's tab may measure live (the masking page times dense vs sparse attention through bench/).
    "views": {"core", "models", "figures", "topic", "app", "views", "bench"},
    "bench": {"core", "models", "figures", "topic", "bench", "training"},
    "training": {"core", "models", "figures", "topic", "training"},
    "cli": {"core", "models", "figures", "topic", "bench", "training", "cli"},
    "__main__": {"cli"},
    "__init__": set(),
    "pages": {"core", "models", "figures", "topic", "app", "views", "bench"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    """The layer of a dotted txviz module: its first package below txviz/, topics folded together."""
    if module.startswith("pages"):
        return "pages"
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    if parts[1] in ROLES:
        return parts[1]
    return "views" if "views" in parts[2:] else "topic"


def imports_of(path: Path) -> set[str]:
    """Every module a file imports (at the top or inside a function), as dotted names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def txviz_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def known_modules() -> set[str]:
    return {module_name(p) for p in txviz_files()}


def txviz_imports(path: Path) -> set[str]:
    """The txviz modules a file imports (names of functions or classes dropped)."""
    known = known_modules()
    return {name for name in imports_of(path) if name in known and name != "txviz"}


def test_every_layer_imports_only_what_it_may():
    wrong = []
    for path in [*txviz_files(), *(ROOT / "pages").glob("*.py")]:
        own = layer(module_name(path))
        for imported in txviz_imports(path):
            if layer(imported) not in ALLOWED[own]:
                wrong.append(f"{path.relative_to(ROOT)} ({own}) imports {imported} ({layer(imported)})")
    assert not wrong, "\n".join(wrong)


def test_only_the_app_layer_and_views_import_streamlit():
    outside = [
        str(path.relative_to(ROOT))
        for path in txviz_files()
        if layer(module_name(path)) not in ("app", "views")
        and any(n.split(".")[0] == "streamlit" for n in imports_of(path))
    ]
    assert not outside, outside


def test_the_product_never_imports_the_test_tooling():
    tooling = {m for m in known_modules() if m.startswith("txviz.app.testing")}
    users = [
        str(path.relative_to(ROOT))
        for path in [*txviz_files(), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
        if not module_name(path).startswith(("txviz.app.testing", "txviz.bench"))
        and txviz_imports(path) & tooling
    ]
    assert tooling and not users, users


def test_no_import_cycles():
    graph = {module_name(p): txviz_imports(p) for p in txviz_files()}
    done, stack, cycles = set(), [], []

    def visit(node: str) -> None:
        if node in stack:
            cycles.append(" -> ".join([*stack[stack.index(node) :], node]))
            return
        if node in done:
            return
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt)
        stack.pop()
        done.add(node)

    for node in sorted(graph):
        visit(node)
    assert not cycles, "\n".join(cycles)


def test_the_checker_sees_a_wrong_import(tmp_path):
    # A test that cannot fail is a defect: a core module importing the app must be caught.
    assert layer("txviz.core.capture") == "core" and layer("txviz.app.ui") == "app"
    assert "app" not in ALLOWED["core"]
    bad = tmp_path / "bad.py"
    bad.write_text("from txviz.app import ui\nimport streamlit as st\n")
    assert {"txviz.app", "txviz.app.ui", "streamlit"} <= imports_of(bad)
    assert layer("txviz.coref.pairs") == "topic" and layer("pages.x") == "pages"
    assert layer("txviz.coref.views") == "views" and "views" not in ALLOWED["topic"] | ALLOWED["app"]
