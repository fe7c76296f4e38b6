"""The course map's parts and figure: the CS60010 chain in order, every part drawn, the chosen one marked."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from txviz import page_map
from txviz.coursemap import figures, linearity
from txviz.coursemap.parts import ADDITIONS, BURIED, PARTS, part
from txviz.selfattention.toy import toy_heads, toy_input


def test_the_four_additions_in_the_slides_order_and_the_buried_items():
    assert [p.name for p in ADDITIONS] == [
        "+ Positions",
        "+ Multi-head",
        "+ Nonlinearity",
        "+ Masked decoding",
    ]
    buried = " ".join(p.name for p in BURIED)
    for item in (
        "Efficient transformers",
        "BERT and GPT objectives",
        "Using the encoder",
        "Mixture of experts",
    ):
        assert item in buried
    assert part("il_elle").links[0].page == "Coreference"
    assert len(part("efficient").links) == 2 and len({link.page for link in part("efficient").links}) == 2
    pages = set(page_map.BY_NAME)
    for item in PARTS:
        for link in item.links:
            assert link.page in pages, link
            assert link.tab is None or link.settings[link.tab_key] == link.tab


def test_the_figure_draws_every_part_and_marks_the_chosen_one():
    figure = figures.course_map_figure("moe")
    boxes = [a for a in figure.layout.annotations if a.text and a.text.startswith("<b>") and a.hovertext]
    assert len(boxes) == len(PARTS)
    marked = [a for a in boxes if a.bordercolor == figures.HIGHLIGHT]
    assert (
        len(marked) == 1
        and "Mixture of experts" in marked[0].text
        and "› Mixture of experts" in marked[0].text
    )
    unmarked = figures.course_map_figure(None).layout.annotations
    assert not [a for a in unmarked if a.bordercolor == figures.HIGHLIGHT]


def test_the_map_says_attention_is_nonlinear_in_x_and_linear_in_the_values():
    # The old text said self-attention alone has "no nonlinearity": its weights are a softmax of X.
    page = (Path(__file__).parents[2] / "pages" / "22_Course_Map.py").read_text()
    notice = "".join(re.findall(r'"([^"]*)"', page[page.index("teaching.notice(") :].split(")\n", 1)[0]))
    assert "no nonlinearity on the values" in notice and "not linear in X" in notice
    assert "and no nonlinearity;" not in notice and "linearity.sentence(" in page
    adds = part("nonlinearity").adds
    assert "nonlinear in its input" in adds and "linear in the values" in adds
    assert {link.page for link in part("nonlinearity").links} == {"Transformer_Block", "Self_Attention"}


def test_the_toy_head_is_not_linear_in_x_but_linear_in_v_for_fixed_weights():
    result = linearity.measure(2.0)
    # An independent computation, written out: biases zero, so a map linear in X would give exactly 2 f(X).
    x = toy_input(linearity.CONFIG)
    head = toy_heads(linearity.CONFIG)[0]

    def f(inputs):
        q, k, v = inputs @ head.omega_q.T, inputs @ head.omega_k.T, inputs @ head.omega_v.T
        s = q @ k.T / np.sqrt(q.shape[1])
        a = np.exp(s - s.max(axis=1, keepdims=True))
        return (a / a.sum(axis=1, keepdims=True)) @ v, a / a.sum(axis=1, keepdims=True)

    (out, weights), (out2, weights2) = f(x), f(2 * x)
    assert np.abs(out2 - 2 * out).max() / np.abs(2 * out).max() == pytest.approx(result.gap_in_x, rel=1e-9)
    assert result.gap_in_x > 0.05  # f(2X) != 2 f(X): far from float error
    assert np.abs(weights2 - weights).max() == pytest.approx(result.weights_change, rel=1e-9)
    values = x @ head.omega_v.T
    np.testing.assert_allclose(
        weights @ (3 * values + out), 3 * (weights @ values) + weights @ out, atol=1e-12
    )
    assert result.gap_in_v < 1e-12  # linear in V when A is held
    line = linearity.sentence(result)
    assert f"{result.gap_in_x:.0%}" in line and "nonlinear in its input" in line
