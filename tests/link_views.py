"""What the link tests change on each page (its main input, its tab and a selection), and the AppTest
steps that make those changes and take the link.

Keyed by the page's name in the page map. A page added without an entry here fails the link tests, which
iterate the page map. ``start`` is a link the test opens first, to keep a slow page cheap
(a small model); ``changes`` are (widget kind, key or fnmatch pattern of the key, new value), an
``Index(i)`` choosing the i-th option; ``tab`` is (tabs key, label) or None for a page whose tabs
need a run the test does not make (Live Generation draws its tabs after generating).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from conftest import assert_clean
from streamlit.testing.v1 import AppTest


@dataclass(frozen=True)
class Index:
    """The i-th option of a selectbox or radio (its values depend on the model or the text)."""

    i: int


@dataclass(frozen=True)
class LinkView:
    changes: tuple[tuple[str, str, Any], ...]
    tab: tuple[str, str] | None
    start: dict[str, Any] = field(default_factory=dict)


VIEWS = {
    "Self_Attention": LinkView(
        (("slider", "n_tokens", 5), ("number_input", "seed", 7), ("select_slider", "n_heads", 4)),
        ("view", "Several heads"),
    ),
    "Attention_Explorer": LinkView(
        (("slider", "layer", 4), ("slider", "head", 5), ("selectbox", "focus_token", Index(4))),
        ("view", "Token focus"),
    ),
    "Positional_Encoding": LinkView(
        (("slider", "n", 40), ("slider", "d", 16), ("select_slider", "base", 1000), ("slider", "t", 7)),
        ("view", "Shift = rotation"),
    ),
    "Tokenization": LinkView(
        (
            ("text_area", "bpe_real_text", "Linked tokenizers split words."),
            ("selectbox", "bpe_real_word", Index(2)),
        ),
        ("bpe_view", "Real tokenizers on your text"),
    ),
    "Masking_Patterns": LinkView(
        (("slider", "swin_h", 6), ("slider", "swin_window", 2)),
        ("view", "Images (Swin)"),
    ),
    "Coreference": LinkView(
        (("selectbox", "pair_index", Index(3)), ("slider", "layer_*@*", 2), ("slider", "head_*@*", 5)),
        None,
    ),
    "Soft_vs_Hard": LinkView(
        (("number_input", "temperature", 0.8), ("slider", "layer", 2), ("slider", "head", 4)),
        None,
    ),
    "Live_Generation": LinkView(
        (
            ("text_area", "gen_prompt", "Say why links help."),
            ("slider", "gen_temperature", 0.7),
            ("number_input", "gen_seed", 3),
        ),
        None,
    ),
    "Encoder_Decoder": LinkView(
        (("text_area", "source_*", "march 3 2001"), ("selectbox", "x_query", Index(2))),
        ("view", "Cross-attention arithmetic"),
    ),
    "Vision_Transformer": LinkView(
        (("selectbox", "sample", Index(2)), ("radio", "view", Index(1)), ("slider", "patch", 5)),
        None,
    ),
    "Transformer_Block": LinkView(
        (("slider", "block_layer", 2), ("selectbox", "block_step", Index(1))),
        ("block_view", "One block"),
    ),
    "Image_GPT": LinkView(
        (("slider", "igpt_heldout", 3), ("toggle", "igpt_told", True)),
        ("view", "Complete a held-out digit"),
    ),
    "Image_Captioning": LinkView(
        (
            ("radio", "cap_source", Index(1)),
            ("selectbox", "cap_digits", Index(2)),
            ("number_input", "cap_seed", 5),
        ),
        None,
    ),
    "Why_Attention": LinkView(
        (("number_input", "n", 12), ("number_input", "k", 5), ("slider", "depth", 3)),
        None,  # its other tabs time layers for 20 s; the tab's link is the one every page shares
    ),
    "Entailment": LinkView(
        (("selectbox", "example", Index(1)), ("text_input", "premise_*", "A man sleeps on a sofa.")),
        None,
    ),
    "Head_Detectors": LinkView(
        (("text_input", "attr_text", "A dog runs across the park."), ("toggle", "attr_skip", False)),
        ("heads_view", "Attention vs attribution"),
    ),
    "Query_Key_Space": LinkView(
        (("slider", "qk_layer", 2), ("radio", "qk_color", Index(1))),
        ("qk_view", "Every head of a layer"),
    ),
    "Why_Attend": LinkView(
        (("slider", "why_layer", 3), ("selectbox", "why_query", Index(6)), ("radio", "why_mode", Index(2))),
        None,
    ),
    "Interventions": LinkView(
        (
            ("text_area", "text", "When Anna and Tom met, Tom gave a book to"),
            ("selectbox", "sweep_mode", Index(1)),
        ),
        ("iv_view", "Every head"),
    ),
    "Course_Map": LinkView((("selectbox", "map_part", Index(2)),), None),
    "Long_Documents": LinkView(
        (("slider", "layer", 2), ("slider", "head", 3), ("slider", "queries", (3, 9))),
        ("view", "Detail"),
        start={
            "model": "minilm",
            "text": "A short document. It has three sentences. The last one ends here.",
        },
    ),
    "Lectures": LinkView(
        (("selectbox", "lecture", Index(1)), ("selectbox", "tour_model", Index(1))),
        None,
    ),
    "Lecture_Room": LinkView((("selectbox", "room_lecture", Index(1)),), None),
    "Head_Atlas": LinkView(
        (("number_input", "layer", 1), ("number_input", "head", 2), ("selectbox", "context", Index(1))),
        ("atlas_view", "Head"),
        start={"model": "tiny-mlm", "atlas_corpus": "txviz examples", "atlas_window": 16},
    ),
    # SmolLM2's quick dictionary, trained by the run's first test that opens the page, then opened from disk
    "Features": LinkView((("number_input", "feature", 7),), ("features_view", "Feature map")),
}


TIMEOUT = 300


def open_link(page, link: dict[str, str]) -> AppTest:
    """A fresh session on ``page`` opened with the query ``link``."""
    app = AppTest.from_file(str(page), default_timeout=TIMEOUT)
    app.query_params.update(link)
    return app.run()


def find(app: AppTest, kind: str, pattern: str):
    """The one widget of ``kind`` whose key matches ``pattern`` (a key or an fnmatch pattern)."""
    found = [w for w in app.get(kind) if w.key and fnmatchcase(w.key, pattern)]
    assert len(found) == 1, (kind, pattern, [w.key for w in app.get(kind)])
    return found[0]


def change(app: AppTest, kind: str, pattern: str, value) -> tuple[str, object]:
    """Set the widget to ``value`` (an Index picks an option), run; its key and its new value."""
    widget = find(app, kind, pattern)
    before = widget.value
    if isinstance(value, Index):  # a radio has no select_index; its options are its values' labels
        value = widget.options[value.i] if not hasattr(widget, "select_index") else value
    widget.select_index(value.i) if isinstance(value, Index) else widget.set_value(value)
    app.run()
    assert_clean(app, (kind, pattern))
    after = find(app, kind, pattern).value
    assert after != before, f"{pattern} was already {before!r}: the test would not see a lost value"
    return widget.key, after


def changed_view(page: Path, view: LinkView) -> tuple[AppTest, dict[str, Any]]:
    """A session on ``page`` with the view's tab opened and its changes made; each changed key's value."""
    app = open_link(page, {k: json.dumps(v) for k, v in view.start.items()})
    assert_clean(app)
    if view.tab:
        key, label = view.tab
        assert app.session_state[key] != label, f"{label} is the first tab: the test would not see it lost"
        app.session_state[key] = label
        app.run()
        assert_clean(app, label)
    return app, dict(change(app, *c) for c in view.changes)
