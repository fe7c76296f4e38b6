"""Ablate one head of a vision transformer: the class probabilities before and after.

One batched forward through the front door: row 0 is the image as the model sees it, row 1 the
same image with the head's output zeroed before the output projection (an ``Ablate`` edit of
txviz.core.edits, applied inside the attention function, no weight touched).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from txviz.core.capture import CaptureSettings
from txviz.core.edits import Ablate
from txviz.core.errors import UserError, require_kind
from txviz.core.running import run
from txviz.vision.runs import pixel_values


@dataclass(frozen=True, eq=False)
class HeadAblation:
    """The class probabilities of one image with and without one head."""

    layer: int
    head: int
    labels: tuple[str, ...]
    before: np.ndarray  # (n_classes,) float64
    after: np.ndarray  # (n_classes,) float64

    @property
    def predicted(self) -> int:
        """The class the intact model predicts."""
        return int(np.argmax(self.before))

    @property
    def predicted_after(self) -> int:
        return int(np.argmax(self.after))

    @property
    def change(self) -> float:
        """How much the intact model's class lost (negative) or gained with the head ablated."""
        return float(self.after[self.predicted] - self.before[self.predicted])


@torch.no_grad()
def ablate_head(loaded, image: Image.Image, layer: int, head: int) -> HeadAblation:
    """Zero head ``head`` of layer ``layer`` (at every token) and classify the image again."""
    require_kind(loaded, ("vision",), "ablate a head of a vision transformer")
    if loaded.processor is None:
        raise UserError(f"{loaded.name} has no image processor, so it cannot read an image.")
    pixels = pixel_values(loaded.processor, image).to(loaded.device)
    edit = Ablate("head_out", layer, head=head, rows=(1,))  # row 0 stays intact: before and after in one call
    output = run(
        loaded.model,
        CaptureSettings(interventions=[edit]),
        ("output",),
        pixel_values=pixels.repeat(2, 1, 1, 1),
    ).output
    logits = getattr(output, "logits", None)
    if logits is None:
        raise UserError(
            f"{loaded.name} has no classification head: there is no class probability for an ablation to change."
        )
    probabilities = torch.softmax(logits.double(), dim=-1).cpu().numpy()
    id2label = getattr(loaded.config, "id2label", {}) or {}
    labels = tuple(str(id2label.get(i, i)) for i in range(probabilities.shape[-1]))
    return HeadAblation(layer, head, labels, probabilities[0], probabilities[1])
