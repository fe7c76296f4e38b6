"""The demos added since the lectures and the Course Map were written are reachable: each has a Course
Map link that opens its page on its tab, and the lectures step through the ones that fit their order."""

from __future__ import annotations

from txviz.coursemap.parts import ADDED, PARTS
from txviz.lecture.files import shipped_lectures

DEMOS = {  # demo -> (page, tab label or None for a page without tabs)
    "the unmasked decoder": ("Masking_Patterns", "Why a decoder needs its mask"),
    "the NAT": ("Encoder_Decoder", "NAT trained for it"),
    "fine-tuning": ("Masking_Patterns", "Using the encoder"),
    "Cordonnier's convolution": ("Why_Attention", "Attention = convolution"),
    "Fig. 12.2": ("Self_Attention", "As one matrix (Fig. 12.2)"),
    "the Conformer and truncated attention": ("Transformer_Block", "Conformer"),
    "ViT-Base": ("Vision_Transformer", "ViT-Base as the books draw it"),
    "relatedness": ("Entailment", None),
    "the original Transformer's numbers": ("Transformer_Block", "Transformer base (2017)"),
    "FLOATER": ("Positional_Encoding", "FLOATER"),
    "nested phrases": ("Why_Attention", "Nested phrases"),
    "cross-attention reading layer l": ("Encoder_Decoder", "Cross-attention reads layer l"),
    "training on exact match": ("Encoder_Decoder", "Training on exact match"),
    "the grammar model": ("Encoder_Decoder", "Grammar as a foreign language"),
    "SAGAN and DETR": ("Vision_Transformer", "SAGAN and DETR"),
}
IN_LECTURES = {  # demo -> the lecture that steps through it
    "the unmasked decoder": "1_attention_and_transformers",
    "nested phrases": "2_from_rnns_to_transformers",
    "the original Transformer's numbers": "2_from_rnns_to_transformers",
    "the Conformer and truncated attention": "2_from_rnns_to_transformers",
    "the grammar model": "2_from_rnns_to_transformers",
    "cross-attention reading layer l": "2_from_rnns_to_transformers",
}


def test_every_demo_has_a_course_map_link_to_its_tab():
    links = {(link.page, link.tab) for part in PARTS for link in part.links}
    for demo, where in DEMOS.items():
        assert where in links, demo
    added = {(link.page, link.tab) for part in ADDED for link in part.links}
    assert ("Why_Attention", "Nested phrases") in added and ("Entailment", None) in added
    grammar = {
        link.settings.get("grammar_task")
        for part in PARTS
        for link in part.links
        if link.tab == "Grammar as a foreign language"
    }
    assert grammar == {"parse:", "translate:"}  # the tree, and il/elle beside the book's example


def test_the_lectures_step_through_the_demos_that_fit_them():
    lectures = shipped_lectures()
    for demo, name in IN_LECTURES.items():
        page, tab = DEMOS[demo]
        opened = [
            step
            for step in lectures[name].steps
            if step.page.endswith(page) and tab in set(step.settings.values())
        ]
        assert opened, (demo, name)
        assert all(len(step.points) >= 2 for step in opened)
    nested = next(
        s for s in lectures["2_from_rnns_to_transformers"].steps if s.title == "Phrases inside phrases"
    )
    assert nested.settings["hier_example"].startswith("She drove slowly into the blue car")
