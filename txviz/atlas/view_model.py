"""What the Head Atlas page shows, as plain data: the Head Finder's table, a head's standing among all
heads, its contexts as token text with the key and query marked."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from txviz.atlas.atlas import Atlas, Metric

SPAN = 12  # tokens shown on each side of the query and key in a context's line


def measured(atlas: Atlas, metrics: Sequence[Metric]) -> list[Metric]:
    """The metrics this atlas holds with at least one number."""
    return [m for m in metrics if m.name in atlas.scores and np.isfinite(atlas.scores[m.name]).any()]


def finder(atlas: Atlas, metrics: Sequence[Metric], rank_by: str, layers: Sequence[int] = ()) -> pd.DataFrame:
    """Every head (of ``layers``, all when empty) with its scores, highest ``rank_by`` first, blanks last."""
    grid = np.indices((atlas.layers, atlas.heads)).reshape(2, -1)
    table = pd.DataFrame({"layer": grid[0], "head": grid[1]})
    for metric in metrics:
        table[metric.label] = atlas.scores[metric.name].astype(float).ravel()
    if layers:
        table = table[table["layer"].isin(list(layers))]
    label = next(m.label for m in metrics if m.name == rank_by)
    return table.sort_values(label, ascending=False, na_position="last", kind="stable").reset_index(drop=True)


def percentile(atlas: Atlas, metric: str, layer: int, head: int) -> float:
    """The share of the model's heads (with a number) whose score is at most this head's, in percent."""
    values = atlas.scores[metric].astype(float)
    finite = values[np.isfinite(values)]
    mine = values[layer, head]
    if not np.isfinite(mine) or not len(finite):
        return float("nan")
    return float(100 * (finite <= mine).mean())


def window_ids(atlas: Atlas, window: int) -> list[int]:
    """The token ids of one stored window (its padding dropped)."""
    row = atlas.tokens[window]
    return [int(t) for t in row[row >= 0]]


def text_pieces(tokenizer, ids: Sequence[int]) -> list[str]:
    """Each token as it reads in running text, so joined pieces read as the text: a WordPiece
    continuation (##) joined to the word before it, a new word after a space; other tokenizers' own
    decoding of each id (a byte-level BPE keeps its leading spaces)."""
    raw = tokenizer.convert_ids_to_tokens(list(ids))
    if any(isinstance(p, str) and p.startswith("##") for p in raw) or _wordpiece(tokenizer):
        return [p[2:] if p.startswith("##") else (f" {p}" if i else p) for i, p in enumerate(map(str, raw))]
    return [tokenizer.decode([i]) for i in ids]


def _wordpiece(tokenizer) -> bool:
    model = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
    return getattr(model, "continuing_subword_prefix", None) == "##"


def line(pieces: Sequence[str], query: int, key: int, span: int = SPAN) -> str:
    """The window's text around the key and the query: the key in [[ ]], the query in << >>.

    Plain text (the page draws it with st.text, never as HTML); cut with "..." outside the span.
    """
    first, last = max(min(query, key) - span, 0), min(max(query, key) + span + 1, len(pieces))
    shown = []
    for position in range(first, last):
        piece = pieces[position]
        if position == key and position == query:
            piece = f"<<[[{piece}]]>>"
        elif position == key:
            piece = f"[[{piece}]]"
        elif position == query:
            piece = f"<<{piece}>>"
        shown.append(piece)
    return ("..." if first else "") + "".join(shown) + ("..." if last < len(pieces) else "")


def context_table(
    atlas: Atlas, criterion: str, layer: int, head: int, decode: Callable[[list[int]], list[str]]
) -> pd.DataFrame:
    """The head's top contexts by ``criterion``, one row each: rank, value, window, query, key, text."""
    found = atlas.contexts[criterion]
    rows = []
    for rank in range(found.window.shape[-1]):
        window = int(found.window[layer, head, rank])
        if window < 0:
            continue
        query, key = int(found.query[layer, head, rank]), int(found.key[layer, head, rank])
        pieces = decode(window_ids(atlas, window))
        rows.append(dict(rank=rank + 1, value=float(found.value[layer, head, rank]), window=window,
                         query=query, key=key, text=line(pieces, query, key)))  # fmt: skip
    return pd.DataFrame(rows, columns=["rank", "value", "window", "query", "key", "text"])


def band_table(
    atlas: Atlas, criterion: str, layer: int, head: int, decode: Callable[[list[int]], list[str]]
) -> pd.DataFrame:
    """The contexts sampled from each decile band below the top (band 1 the highest)."""
    found = atlas.contexts[criterion]
    rows = []
    bands, per = found.band_window.shape[-2:]
    for band in range(bands):
        for j in range(per):
            window = int(found.band_window[layer, head, band, j])
            if window < 0:
                continue
            query, key = (
                int(found.band_query[layer, head, band, j]),
                int(found.band_key[layer, head, band, j]),
            )
            pieces = decode(window_ids(atlas, window))
            rows.append(dict(band=band + 1, value=float(found.band_value[layer, head, band, j]),
                             text=line(pieces, query, key)))  # fmt: skip
    return pd.DataFrame(rows, columns=["band", "value", "text"])


def same_shape(a: Atlas, b: Atlas) -> bool:
    """Two atlases whose heads pair up one to one (same layers and heads)."""
    return (a.layers, a.heads) == (b.layers, b.heads)
