"""What a page teaches at a glance: a one-line "what to notice" under its first figure, and a glossary
of the words every page leans on, shown on hover (a caption's or a widget's help), never as HTML."""

from __future__ import annotations

import re

import streamlit as st

from txviz.app import projector

# One definition per term: what the word means on these pages, in a sentence or two.
GLOSSARY = {
    "head": "An attention head: one set of query, key and value projections inside a layer. Each head "
    "computes its own attention pattern; a layer runs several side by side and adds their outputs.",
    "rollout": "Attention rollout (Abnar & Zuidema 2020): multiply the layers' head-averaged attention, "
    "each mixed half and half with the identity for the skip connection, to estimate how much each "
    "input token reaches each position through all the layers below.",
    "entropy": "The entropy of an attention row, in nats: 0 when a query puts all its weight on one key, "
    "log(n) when it spreads evenly over n keys. Low entropy is a sharp head, high a diffuse one.",
    "sink": "An attention sink: a token (often the first, [CLS], [SEP] or a full stop) that draws a large "
    "share of many rows' weight without carrying much meaning, a place for a head to put weight "
    "it does not need.",
    "logit lens": "The logit lens (nostalgebraist 2020): read the residual stream after a middle layer "
    "through the model's final norm and unembedding, as if the model stopped there, to see which next "
    "token it already favours.",
    "residual stream": "The running vector of each token that every block reads from and adds to: the "
    "embedding plus each attention and MLP output so far. The skip connections make it a shared "
    "channel between layers.",
}
_PATTERNS = {term: re.compile(rf"\b{re.escape(term)}s?\b", re.IGNORECASE) for term in GLOSSARY}


def terms_in(text: str) -> list[str]:
    """The glossary terms a text mentions (plurals count), in the glossary's order."""
    return [term for term, pattern in _PATTERNS.items() if pattern.search(text)]


def help_for(*terms: str) -> str | None:
    """The glossary's definitions of the terms, as a tooltip's markdown; None for no terms."""
    lines = [f"**{term}**: {GLOSSARY[term]}" for term in terms]
    return "\n\n".join(lines) or None


def notice(text: str, where=st) -> None:
    """The one line under a page's first figure saying what to look for; the glossary's terms it
    mentions are defined on hover. In projector mode it follows the first figure onto the stage."""
    if where is st:
        where = projector.staged_slot() or st
    where.caption(f"**What to notice:** {text}", help=help_for(*terms_in(text)))
