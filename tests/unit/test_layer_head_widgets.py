"""A slider or number box bounded by a model's layers or heads is drawn only by txviz/app/widgets.py.

A slider cannot span a single value (Streamlit refuses min == max), so one bounded by ``n_layers - 1``
or ``n_heads - 1`` crashes on a one-layer or one-head model; the shared picker shows a caption there.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIDGETS = {"slider", "number_input", "select_slider"}
SIZES = {"n_layers", "n_heads"}
SHARED = "txviz/app/widgets.py"


def _mentions_a_size(node: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id in SIZES) or (isinstance(n, ast.Attribute) and n.attr in SIZES)
        for n in ast.walk(node)
    )


def bounded_by_model(source: str) -> list[int]:
    """Lines of every slider or number box whose bounds read a model's number of layers or heads."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WIDGETS
        ):
            continue
        bounds = [*node.args[1:3], *(k.value for k in node.keywords if k.arg in ("min_value", "max_value"))]
        if any(_mentions_a_size(b) for b in bounds):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_layer_or_head_slider_outside_the_shared_widgets():
    found = []
    for path in [*sorted((ROOT / "txviz").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]:
        name = path.relative_to(ROOT).as_posix()
        if name != SHARED:
            found += [f"{name}:{line}" for line in bounded_by_model(path.read_text())]
    assert not found, (
        "use widgets.index_picker / layer_head_picker (a caption for one layer or head):\n" + "\n".join(found)
    )


def test_the_rule_fails_on_a_synthetic_violation():
    violation = """
layer = c1.slider("Layer", 0, loaded.n_layers - 1, 0, key="layer")
head = st.number_input("Head", min_value=0, max_value=n_heads - 1, key="head")
steps = st.slider("Steps", 0, 10, 3)
step = st.slider("Step", 0, len(steps) - 1, key="step")
"""
    assert bounded_by_model(violation) == [2, 3]
