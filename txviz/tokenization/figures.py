"""Figures of BPE training and segmentation: counts per step, vocabulary curve, merge trees."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go

from txviz.figures.axes import margin, ticks
from txviz.figures.colors import scale
from txviz.figures.text import in_template, plain, plain_all
from txviz.tokenization.bpe import BpeTrace, MergeStage, show_whitespace
from txviz.tokenization.subwords import WordTokens

MARGIN = margin()
MERGED_COLOUR = "#d62728"
KEPT_COLOUR = "#c7d3e3"


def count_matrix(trace: BpeTrace, max_tokens: int = 40) -> tuple[list[str], np.ndarray]:
    """(tokens, counts [token, step]) for the tokens with the highest peak counts."""
    peak = dict(trace.initial_counts)  # token -> highest count it ever had
    for record in trace.steps:
        for token, count in record.changed_counts:
            peak[token] = max(peak.get(token, 0), count)
    chosen = set(sorted(peak, key=lambda token: (-peak[token], token))[:max_tokens])
    order = [token for token in peak if token in chosen]  # characters first, then by birth
    row_of = {token: row for row, token in enumerate(order)}
    matrix = np.zeros((len(order), trace.n_steps + 1), dtype=np.int64)  # [token, step]
    for token, count in trace.initial_counts:
        if token in row_of:
            matrix[row_of[token], :] = count
    for record in trace.steps:
        for token, count in record.changed_counts:
            if token in row_of:
                matrix[row_of[token], record.index :] = count
    return order, matrix


def step_heatmap(
    trace: BpeTrace, step: int | None = None, max_tokens: int = 40, presenting: bool = False
) -> go.Figure:
    """Count of every token (rows) after each merge (columns); a line marks the chosen step."""
    tokens, matrix = count_matrix(trace, max_tokens)
    labels = [show_whitespace(token) for token in tokens]
    steps = list(range(matrix.shape[1]))
    shown = np.where(matrix > 0, matrix, np.nan)  # absent tokens stay blank, not zero-coloured
    figure = go.Figure(
        go.Heatmap(
            z=shown,
            x=steps,
            y=list(range(len(tokens))),
            colorscale=scale("sequential", presenting),
            colorbar={"title": "count"},
            customdata=np.array([[label] * len(steps) for label in plain_all(labels)], dtype=object),
            hovertemplate="token %{customdata}<br>after merge %{x}: %{z}<extra></extra>",
        )
    )
    if step is not None:
        figure.add_vline(x=step, line_color=MERGED_COLOUR, line_width=2)
    figure.update_layout(
        title="Token counts at every merge (blank: token not in the corpus)",
        height=max(320, 16 * len(tokens) + 120),
        margin=MARGIN,
    )
    figure.update_xaxes(title="merge step (0 = characters only)")
    figure.update_yaxes(title="token", autorange="reversed", **ticks(labels, max_ticks=None))
    return figure


def vocab_curve(trace: BpeTrace, step: int | None = None) -> go.Figure:
    """Distinct tokens in the corpus after each merge: rises with fragments, falls into words."""
    steps = list(range(trace.n_steps + 1))
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=steps,
            y=trace.tokens_in_use_curve(),
            mode="lines+markers",
            name="tokens in the corpus",
            hovertemplate="after merge %{x}: %{y} distinct tokens<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=steps,
            y=trace.vocab_size_curve(),
            mode="lines",
            line={"dash": "dot"},
            name="learned vocabulary (alphabet + merges)",
            visible="legendonly",  # a straight climb that would flatten the curve that matters
            hovertemplate="after merge %{x}: %{y} tokens learned<extra></extra>",
        )
    )
    if step is not None:
        figure.add_vline(x=step, line_color=MERGED_COLOUR, line_width=2)
    figure.update_layout(
        title="Vocabulary size over iterations",
        height=340,
        margin=MARGIN,
        legend={"orientation": "h", "y": -0.25},
    )
    figure.update_xaxes(title="merge step")
    figure.update_yaxes(title="number of tokens", rangemode="tozero")
    return figure


def merge_tree(
    initial: Sequence[str],
    stages: Sequence[MergeStage],
    title: str,
    display: Callable[[str], str] = show_whitespace,
) -> go.Figure:
    """Pieces of one word at each merge, characters on top; the piece just made is red."""
    rows: list[tuple[str, ...]] = [tuple(initial)] + [stage.pieces for stage in stages]
    labels = ["characters"] + [
        f"rank {stage.rank}: {display(stage.pair[0])} + {display(stage.pair[1])}" for stage in stages
    ]
    kept: dict[str, list] = {"y": [], "base": [], "x": [], "text": [], "raw": []}
    merged: dict[str, list] = {"y": [], "base": [], "x": [], "text": [], "raw": []}
    for row, pieces in enumerate(rows):
        new_piece = None
        if row > 0:
            pair = stages[row - 1].pair
            new_piece = _merged_index(rows[row - 1], pieces, pair)
        start = 0
        for index, piece in enumerate(pieces):
            bucket = merged if index == new_piece else kept
            bucket["y"].append(row)
            bucket["base"].append(start)
            bucket["x"].append(len(piece))
            bucket["text"].append(plain(display(piece)))
            bucket["raw"].append(plain(piece))
            start += len(piece)
    figure = go.Figure()
    for name, bucket, colour in (
        ("unchanged piece", kept, KEPT_COLOUR),
        ("piece made by this merge", merged, MERGED_COLOUR),
    ):
        figure.add_trace(
            go.Bar(
                orientation="h",
                y=bucket["y"],
                x=bucket["x"],
                base=bucket["base"],
                text=bucket["text"],
                customdata=bucket["raw"],
                textposition="inside",
                insidetextanchor="middle",
                marker={"color": colour, "line": {"color": "white", "width": 2}},
                name=name,
                hovertemplate="%{text}<br>raw token: %{customdata}<extra></extra>",
            )
        )
    width = max(1, sum(len(piece) for piece in rows[0]))
    figure.update_layout(
        title=plain(title),
        barmode="overlay",
        height=150 + 36 * len(rows),  # room for the title and the x axis' numbers and title
        margin=margin(top=60, bottom=50),
        showlegend=False,
        uniformtext={"minsize": 9, "mode": "show"},
    )
    figure.update_xaxes(title="character position", range=[0, width], dtick=1)
    figure.update_yaxes(autorange="reversed", **ticks(labels, max_ticks=None))  # ticks say it
    return figure


def _merged_index(before: Sequence[str], after: Sequence[str], pair: tuple[str, str]) -> int:
    """Index in `after` of the first piece the pair's merge produced."""
    for index in range(len(after)):
        if (
            index + 1 < len(before)
            and before[index] == pair[0]
            and before[index + 1] == pair[1]
            and after[index] == pair[0] + pair[1]
            and tuple(before[:index]) == tuple(after[:index])
        ):
            return index
    return -1


WORD_COLOURS = ("#9ecae1", "#fdd0a2")  # alternate by word so word boundaries show


def token_spans(words: Sequence[WordTokens]) -> list[tuple[float, float]]:
    """(start, width) of each token in text characters; pieces of one character share it."""
    spans: list[tuple[float, float]] = []
    for word in words:
        offsets = list(word.offsets) or [(0, len(word.text))] * len(word.tokens)
        i = 0
        while i < len(offsets):
            j = i
            while j + 1 < len(offsets) and offsets[j + 1] == offsets[i]:
                j += 1  # byte pieces of one multi-byte character carry the same offsets
            start, end = offsets[i]
            width = max(end - start, 1) / (j - i + 1)
            spans.extend((start + k * width, width) for k in range(j - i + 1))
            i = j + 1
    return spans


def token_strips(rows: Sequence[tuple[str, Sequence[WordTokens]]]) -> go.Figure:
    """One row of token boxes per tokenizer, placed at their characters in the text."""
    figure = go.Figure()
    end = 1.0
    for row, (name, words) in enumerate(rows):
        base, width, text, hover, colours = [], [], [], [], []
        spans = iter(token_spans(words))
        for w, word in enumerate(words):
            for raw, readable, token_id in zip(word.tokens, word.readable, word.ids, strict=True):
                start, size = next(spans)
                base.append(start)
                width.append(size)
                end = max(end, start + size)
                text.append(plain(readable))
                hover.append([plain(raw), token_id, plain(word.text)])
                colours.append(WORD_COLOURS[w % 2])
        figure.add_trace(
            go.Bar(
                x=width,
                base=base,
                y=[row] * len(base),
                orientation="h",
                text=text,
                customdata=hover,
                textposition="inside",
                insidetextanchor="middle",
                textangle=0,
                marker={"color": colours, "line": {"color": "white", "width": 2}},
                name=plain(name),
                hovertemplate=(
                    "%{text}<br>raw token: %{customdata[0]}<br>id: %{customdata[1]}"
                    "<br>word: %{customdata[2]}<extra>" + in_template(name) + "</extra>"
                ),
            )
        )
    figure.update_layout(
        title="Tokens of your text, placed at their characters (hover for the raw piece and id)",
        barmode="overlay",
        height=110 + 60 * len(rows),
        margin=MARGIN,
        showlegend=False,
        uniformtext={"minsize": 9, "mode": "hide"},
    )
    figure.update_xaxes(title="character position in your text", range=[0, end])
    figure.update_yaxes(title="tokenizer", autorange="reversed", **ticks([name for name, _ in rows]))
    return figure
