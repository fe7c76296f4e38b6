"""The self-attention page's sidebar (the toy's size, seed and scaling) and what its tabs share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from txviz.app import ui, widgets
from txviz.selfattention import figures as figs
from txviz.selfattention import prince
from txviz.selfattention import toy as ta


@dataclass(frozen=True)
class ToySettings:
    """The sidebar's toy: one head's size and seed (the book's with ``book``), and √d scaling."""

    config: ta.ToyConfig
    scaled: bool
    book: bool = False
    book_x: np.ndarray | None = None  # Prince's Fig. 12.1 inputs and solved head, with ``book``
    book_head: ta.HeadWeights | None = None

    @property
    def tokens(self) -> list[str]:
        return figs.token_labels(self.config.n_tokens)

    @property
    def dims(self) -> list[str]:
        return [f"d{j + 1}" for j in range(self.config.d_model)]


def sidebar() -> ToySettings:
    """The sidebar's toy input; the book's preset replaces its size and seed."""
    with st.sidebar:
        st.subheader("Toy input")
        book = widgets.linked_toggle("Prince's Fig. 12.1 (first tab)", "fig_12_1")
        n_tokens = st.slider(
            "N tokens", 1, 8, ui.link_value("n_tokens", 3, range(1, 9)), key="n_tokens", disabled=book
        )
        d_model = st.slider(
            "D dimensions", 1, 8, ui.link_value("d_model", 4, range(1, 9)), key="d_model", disabled=book
        )
        seed = st.number_input(
            "Seed", 0, 10_000, ui.link_value("seed", 0, range(10_001)), key="seed", disabled=book
        )
        scaled = widgets.linked_toggle("Divide scores by √d", "scaled", True)
    book_x = book_head = None
    if book:  # the book's own numbers: three tokens, weights solved for its attention
        book_x, book_head = prince.figure_12_1(scaled)
        n_tokens, d_model, seed = prince.CONFIG.n_tokens, prince.CONFIG.d_model, prince.CONFIG.seed
    with ui.user_errors():
        config = ta.ToyConfig(n_tokens, d_model, 1, int(seed))
    return ToySettings(config, scaled, book, book_x, book_head)


def elsewhere_note(settings: ToySettings) -> None:
    """With the book's preset, a note on the tabs after the first: its solved head belongs there."""
    if settings.book:
        st.caption(prince.ELSEWHERE)


def show_matrix(matrix, rows, columns, title, row_title="", column_title="", **kwargs) -> None:
    ui.show_figure(
        figs.matrix_figure(matrix, rows, columns, title, row_title, column_title, **kwargs), key=title
    )
