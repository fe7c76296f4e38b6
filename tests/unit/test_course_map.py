"""The course map's parts and figure: the CS60010 chain in order, every part drawn, the chosen one marked."""

from __future__ import annotations

from txviz.app import navigation
from txviz.coursemap import figures
from txviz.coursemap.parts import ADDITIONS, BURIED, PARTS, part


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
    pages = {navigation.url_name(s) for s in navigation.PAGE_FILES}
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
