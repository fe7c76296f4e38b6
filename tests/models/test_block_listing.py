"""The block as code prints the book's EncoderBlock or DecoderBlock, with steps labelled by their inputs."""

from __future__ import annotations

import pytest

from txviz import models
from txviz.block.opened import open_block
from txviz.block.recording import STAGES, run_text

# probml's pseudo-code (spaces collapsed): the encoder block, and the decoder block whose self-attention
# is masked and whose cross-attention reads the encoder's output E
ENCODER_BLOCK = ("Z = LayerNorm(MultiHeadAttn(Q=X, K=X, V=X) + X)", "E = LayerNorm(FeedForward(Z) + Z)")
DECODER_BLOCK = (
    "Z = LayerNorm(MaskedMultiHeadAttn(Q=X, K=X, V=X) + X)",
    "Z' = LayerNorm(MultiHeadAttn(Q=Z, K=E, V=E) + Z)",
    "D = LayerNorm(FeedForward(Z') + Z')",
)


def _code(lines) -> tuple[str, ...]:
    """Each line's statement, spaces collapsed, without the trailing note."""
    return tuple(" ".join(line.split("  E:")[0].split()) for line in lines)


@pytest.fixture(scope="module")
def date_bart_run():
    loaded = models.load("date-bart", "cpu")
    return loaded, run_text(loaded, "the third of march two thousand", STAGES)


def test_decoder_block_prints_the_books_decoder_block(date_bart_run):
    loaded, run = date_bart_run
    opened = open_block(loaded, run, "decoder", 0)
    assert _code(opened.lines) == DECODER_BLOCK
    codes = {s.name: s.code for s in opened.steps}
    assert "causal mask" in codes["A"]  # the masked self-attention the first line names
    assert codes["Q (cross)"].startswith("Q = Z W_q") and codes["K (cross)"].startswith("K = E W_k")
    # the FFN reads Z', the cross-attention sub-block's output, and the block returns D
    assert codes["H"].startswith("H = ") and "(Z' W_1ᵀ" in codes["H"]
    assert codes["FFN(Z')"] == "FeedForward(Z') = H W_2ᵀ + b_2"
    assert codes["FFN(Z') + Z'"] == "S₂ = FeedForward(Z') + Z'"
    assert opened.steps[-1].name == "D" and opened.max_difference <= 1e-5


def test_encoder_block_prints_the_books_encoder_block(date_bart_run):
    loaded, run = date_bart_run
    opened = open_block(loaded, run, "encoder", 0)
    assert _code(opened.lines) == ENCODER_BLOCK
    codes = {s.name: s.code for s in opened.steps}
    assert "causal" not in codes["A"] and "(Z W_1ᵀ" in codes["H"]
    assert opened.steps[-1].name == "E" and opened.max_difference <= 1e-5
