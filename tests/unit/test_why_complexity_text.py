"""Why Attention's complexity paragraph: its counts, in its one unit, are the formulas the page measures."""

from __future__ import annotations

import ast
import math
import re

from conftest import ROOT

from txviz.why import cost

N, D, K = 7, 5, 3  # distinct primes, so no two different counts agree by accident


def _paragraph() -> str:
    """The "Complexity per layer" text as the page's views define it (read, not run)."""
    tree = ast.parse((ROOT / "txviz" / "why" / "views" / "__init__.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "COLUMNS":
            return ast.literal_eval(node.value)["Complexity per layer"]
    raise AssertionError("COLUMNS not found")


def _count(term: str) -> int:
    """The value of a count such as "2 n² d" at n, d, k = N, D, K."""
    values = {"n": N, "d": D, "k": K}
    return math.prod(
        int(f) if f.isdigit() else values[f[0]] ** (2 if f.endswith("²") else 1) for f in term.split()
    )


def test_every_count_is_half_the_flop_formula():
    text = _paragraph()
    assert "multiply-adds" in text and "FLOPs on the charts are twice these" in text
    counts = [_count(t) for t in re.findall(r"(?:\d )?[knd]²? [knd]²?(?: [knd]²?)?(?=[.:;)]| on)", text)]
    half = {kind: cost.formula_flops(kind, N, D, K) // 2 for kind in cost.LABELS}
    conv, rnn, attention = half["conv"], half["rnn"], half["attention"]
    projections = half["attention+proj"] - attention
    assert counts == [conv, rnn, attention, projections]
    assert projections == 2 * rnn and "as much as two recurrent layers" in text
