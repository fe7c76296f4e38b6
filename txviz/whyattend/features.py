"""Feature mode: the stream entering block L written in a dictionary's features, so a head's score splits
into (query feature) x (key feature) pairs.

A TopK dictionary at ``decoder.L.resid_pre`` writes the stream at position p exactly as
x_p = sum_f z_f(p) W_dec[f] scale + b_dec scale + e_p, with z = encode(x_p) and e_p = x_p - decode(z)
the reconstruction error. The error is a part of its own, so the parts still sum to the recorded stream
and the pairs to the score. The parts are the features active at any of the positions (a zero vector
where a feature is inactive), the dictionary's bias and the error.
"""

from __future__ import annotations

import torch

from txviz.core.errors import UserError
from txviz.features.sae import TopKSAE
from txviz.whyattend.stream import Part, Stream

FEATURE_MODES = ("edge", "contrast")


class FeatureModeError(UserError):
    """A mode or dictionary the feature split cannot use; the message says why."""


def place_name(layer: int) -> str:
    """The place of the dictionary a head of block ``layer`` reads: the stream entering that block."""
    return f"decoder.{layer}.resid_pre"


def check_mode(mode: str) -> None:
    """Refuse row mode: its key side mixes every key of the row, each with its own features."""
    if mode not in FEATURE_MODES:
        raise FeatureModeError(
            'Split into features explains one key ("this key") or one key against another ("this key '
            "rather than another\"); against the row's mean, every key of the row would bring its own "
            "features. Choose one of those two, or turn the feature split off."
        )


def feature_stream(flow: Stream, sae: TopKSAE) -> Stream:
    """``flow``'s recorded stream as the dictionary's active features, its bias and its error."""
    x = flow.actual  # (P, D), the stream the model computed: the parts sum to it, error included
    width = sae.W_dec.shape[1]
    if width != x.shape[1]:
        raise FeatureModeError(
            f"The dictionary reads vectors of width {width}; the stream here has width {x.shape[1]}. "
            "It was built for another place or model: build one at this block's input."
        )
    z = sae.encode(x)
    active = torch.nonzero((z != 0).any(0)).flatten()
    directions = sae.W_dec[active].float() * sae.scale  # (F, D)
    vectors = z[:, active].T[:, :, None] * directions[:, None, :]  # (F, P, D): zero where inactive
    bias = (sae.b_dec.float() * sae.scale).expand(len(flow.positions), -1)
    error = x - sae.decode(z)
    parts = (*(Part("feature", feature=int(f)) for f in active), Part("dict_bias"), Part("error"))
    return Stream(parts, torch.cat((vectors, bias[None], error[None])), flow.positions, x)
