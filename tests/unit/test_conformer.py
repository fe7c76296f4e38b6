"""The Conformer block as code: its order, its residual sums, and what the convolution module reads."""

from __future__ import annotations

import pytest
import torch

from txviz.block import conformer


@pytest.mark.parametrize(("kernel", "frame"), [(31, 50), (7, 2), (3, 99)])
def test_convolution_module_reads_exactly_its_kernel_window_and_attention_reads_all(kernel, frame):
    reads = conformer.reads(kernel, frame, frames=100)
    half = kernel // 2
    assert reads.span("convolution module") == (max(frame - half, 0), min(frame + half, 99))
    assert reads.span("self-attention") == (0, 99)
    assert reads.span("whole Conformer block") == (0, 99)


def test_block_is_the_macaron_sandwich_with_the_convolution_after_attention():
    model = conformer.block(kernel=15)
    x = torch.randn(2, 40, conformer.D_MODEL)
    with torch.no_grad():
        after = model.stages(x)
        ffn_in = x + 0.5 * model.ffn_in(x)
        attended = ffn_in + model.attend(ffn_in)
        convolved = attended + model.convolution(attended)
        out = model.norm(convolved + 0.5 * model.ffn_out(convolved))
    for got, want in zip(after, (ffn_in, attended, convolved, None, out), strict=True):
        if want is not None:
            torch.testing.assert_close(got, want)
    torch.testing.assert_close(model(x), out)
    assert len(after) == len(conformer.MODULES) and out.shape == x.shape
    conv = model.convolution
    assert conv.depthwise.groups == conformer.D_MODEL and conv.depthwise.kernel_size == (15,)
    assert conv.pointwise_in.out_channels == 2 * conformer.D_MODEL  # halved again by the GLU
    assert "class ConvolutionModule" in conformer.source()
    with pytest.raises(ValueError, match="odd"):
        conformer.block(kernel=32)
