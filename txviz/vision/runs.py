"""Running a vision model on an image and recording every head's attention."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from txviz.core.trace import AttentionTrace
from txviz.vision.patches import PatchGrid, patch_grid


@dataclass(frozen=True, eq=False)
class VisionAttention:
    """One image through a vision transformer: attention, the grid, and its prediction."""

    trace: AttentionTrace  # kind "vision"; tokens are the prefix tokens then p0, p1, ...
    grid: PatchGrid
    image: np.ndarray  # (H, W, 3) uint8: the model's input, its processor undone
    labels: tuple[str, ...] = ()  # class names, empty without a classification head
    probabilities: np.ndarray | None = None  # (n_classes,) float64

    def top_class(self) -> tuple[str, float] | None:
        """(label, probability) of the most likely class, or None without a head."""
        if self.probabilities is None:
            return None
        best = int(np.argmax(self.probabilities))
        return self.labels[best], float(self.probabilities[best])


def pixel_values(processor, image: Image.Image):
    """The processor's (1, 3, H, W) float tensor for one RGB image."""
    return processor(images=image.convert("RGB"), return_tensors="pt")["pixel_values"]


def model_input_image(processor, pixels) -> np.ndarray:
    """Undo the processor's scaling and normalisation: (1, 3, H, W) -> (H, W, 3) uint8."""
    x = pixels[0].detach().cpu().double().numpy()  # (3, H, W)
    if getattr(processor, "do_normalize", False):
        mean = np.asarray(processor.image_mean, dtype=np.float64).reshape(-1, 1, 1)
        std = np.asarray(processor.image_std, dtype=np.float64).reshape(-1, 1, 1)
        x = x * std + mean
    if getattr(processor, "do_rescale", False):
        x = x / processor.rescale_factor
    return np.clip(np.round(x), 0, 255).astype(np.uint8).transpose(1, 2, 0)


def trace_image(loaded, image: Image.Image) -> VisionAttention:
    """Run a loaded vision model on an RGB image, recording every layer's attention."""
    import torch

    from txviz.core.capture import CaptureSettings
    from txviz.core.errors import UserError, require_kind
    from txviz.core.running import run

    require_kind(loaded, ("vision",), "read an image")
    if loaded.processor is None:
        raise UserError(f"{loaded.name} has no image processor, so it cannot read an image.")
    pixels = pixel_values(loaded.processor, image)  # (1, 3, H, W)
    result = run(
        loaded.model, CaptureSettings(record={"weights"}), ("output",), pixel_values=pixels.to(loaded.device)
    )
    rec, output = result, result.output
    weights = rec.stack("weights").astype(np.float32)  # (L, H, T, T)
    grid = patch_grid(loaded.config, tuple(pixels.shape[-2:]), n_tokens=weights.shape[-1])
    tokens = grid.token_labels()
    trace = AttentionTrace(
        query_tokens=tokens,
        key_tokens=tokens,
        weights=weights,
        model_name=loaded.name,
        kind="vision",
        layer_names=tuple(rec.names()),
        special=tuple(i < grid.n_prefix for i in range(grid.n_tokens)),
    )
    labels: tuple[str, ...] = ()
    probabilities = None
    logits = getattr(output, "logits", None)
    if logits is not None:
        probabilities = torch.softmax(logits[0].double(), dim=-1).cpu().numpy()
        id2label = getattr(loaded.config, "id2label", {}) or {}
        labels = tuple(str(id2label.get(i, i)) for i in range(len(probabilities)))
    return VisionAttention(trace, grid, model_input_image(loaded.processor, pixels), labels, probabilities)
