"""The tokens a feature promotes and suppresses through the unembedding: its direct logit effect.

A feature's direction is its decoder row in the place's units (``W_dec[f] x scale``). At a
``resid_pre`` place it is already in the residual stream; at a ``head_out`` place (the heads'
outputs concatenated, heads x d_head wide) it first goes through the block's attention output
projection W_O, without its bias (the bias is added whatever the feature does). In the stream it is
carried straight to the logits, skipping the blocks after the place (the direct path only): through
the final norm with its per-token scale frozen at 1, so only its gain (and a LayerNorm's centring)
applies, then W_U. The frozen scale divides every logit of a token alike, so it changes the size of
the effect, never the order of the tokens. The lm_head's bias, where there is one, is left out too.
"""

from __future__ import annotations

import numpy as np
import torch

from txviz.core.layouts import cached_layout
from txviz.core.tokens import readable_tokens
from txviz.features.activations import FeaturesError, Place, check_place
from txviz.features.sae import TopKSAE
from txviz.models import LoadedModel
from txviz.whyattend.linear import CannotDecompose, matrix


def check_feature(sae: TopKSAE, feature: int) -> int:
    """``feature`` as an int, or a FeaturesError when the dictionary has no such feature."""
    if not 0 <= int(feature) < sae.width:
        raise FeaturesError(f"This dictionary has features 0 to {sae.width - 1}; there is no {feature}.")
    return int(feature)


def readout(loaded: LoadedModel) -> tuple[torch.Tensor, bool, torch.Tensor]:
    """(final norm's gain (D,), whether it centres (a LayerNorm), W_U (D, V)) in float32 on the CPU."""
    model = loaded.model
    layout = cached_layout(model)
    head = model.get_submodule(layout.lm_head) if layout.lm_head else None
    weight = getattr(head, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise FeaturesError(
            f"{loaded.name} has no unembedding txviz can read, so a feature has no logit effect."
        )
    w_u = weight.detach().float().cpu().T  # nn.Linear keeps (V, D)
    d_model = int(model.config.hidden_size)
    gain, center = torch.ones(d_model), False
    if layout.final_norm and layout.form != "post-LN":  # post-LN's last block ends in its own norm
        norm = model.get_submodule(layout.final_norm)
        found = getattr(norm, "weight", None)
        if found is not None:
            gain = found.detach().float().cpu()
            if not isinstance(norm, torch.nn.LayerNorm):
                gain = gain + layout.norm_offset  # Gemma's RMSNorm multiplies by 1 + weight
        center = isinstance(norm, torch.nn.LayerNorm)
    if w_u.shape[0] != d_model:
        raise FeaturesError(f"The unembedding of {loaded.name} reads {w_u.shape[0]} numbers, not {d_model}.")
    return gain, center, w_u


def stream_direction(loaded: LoadedModel, place: Place, sae: TopKSAE, feature: int) -> torch.Tensor:
    """The feature's decoder row as a direction in the residual stream, float32 (d_model,)."""
    f = check_feature(sae, feature)
    width = check_place(loaded, place)
    if sae.W_dec.shape[1] != width:
        raise FeaturesError(
            f"This dictionary reads {sae.W_dec.shape[1]} numbers per token but {place.name} has {width}."
        )
    direction = sae.W_dec[f].detach().float().cpu() * sae.scale
    if place.kind == "resid_pre":
        return direction
    if place.kind != "head_out":
        raise FeaturesError(f"No logit effect for a place of kind {place.kind!r}.")
    layout = cached_layout(loaded.model)
    if layout.record is None:
        raise FeaturesError(
            f"The model map cannot place the attention output projection of {loaded.name}, so a head_out "
            "feature cannot be carried to the stream."
        )
    block = layout.block(loaded.model, layout.last_stack, place.layer)
    try:
        w_o, _bias = matrix(block.get_submodule(layout.record.attention.o), layout.in_out)  # (H x d_head, D)
    except CannotDecompose as error:
        raise FeaturesError(
            f"The output projection of block {place.layer} cannot be read: {error}"
        ) from error
    return direction @ w_o


def direct_logits(loaded: LoadedModel, place: Place, sae: TopKSAE, feature: int) -> np.ndarray:
    """The feature's direct effect on every logit, float32 (vocab,): its direction through gain x W_U.

    The final norm's per-token scale is frozen at 1: it divides all of a token's logits alike, so it
    only rescales the effect; a LayerNorm's centring is applied (it is linear).
    """
    direction = stream_direction(loaded, place, sae, feature)
    gain, center, w_u = readout(loaded)
    if center:
        direction = direction - direction.mean()
    return ((direction * gain) @ w_u).numpy().astype(np.float32)


def promoted(
    loaded: LoadedModel, place: Place, sae: TopKSAE, feature: int, n: int = 10
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The n tokens the feature promotes most and the n it suppresses most, as (readable token, effect)."""
    effect = direct_logits(loaded, place, sae, feature)
    n = max(0, min(int(n), len(effect)))
    order = np.argsort(-effect, kind="stable")
    up, down = order[:n], order[::-1][:n]

    def named(ids: np.ndarray) -> list[tuple[str, float]]:
        tokens, _ = readable_tokens(loaded.tokenizer, [int(i) for i in ids])
        return [(token, float(effect[i])) for token, i in zip(tokens, ids, strict=True)]

    return named(up), named(down)
