"""The records of the model registry: what a model is, and a model ready to run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from txviz.core.errors import UserError

CHECK_TOLERANCE = 1e-4  # float32: the same attention in another order differs by ~1e-6
Kind = Literal["encoder", "decoder", "encoder-decoder", "vision", "image-decoder"]
KINDS: tuple[Kind, ...] = get_args(Kind)
Precision = Literal["float32", "float16", "bfloat16"]  # of the weights; records are float32 always
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
REDUCED_NOTE = (
    "Weights in {dtype}: every record is still float32, but the model computes in {dtype}, so its "
    "numbers differ from float32 by about 1% and greedy (most likely) tokens may change."
)


class ModelLoadError(UserError):
    """A model could not be loaded; the message is meant for the user."""


@dataclass(frozen=True)
class ModelInfo:
    """One entry of the registry, as the model picker and the home page show it."""

    name: str
    kind: Kind
    description: str
    parameters: str  # e.g. "22.7M"
    source: str  # where the weights come from
    loadable: bool = True
    reason: str = ""  # why it cannot load now, when it cannot

    @property
    def label(self) -> str:
        return f"{self.name} ({self.kind}, {self.parameters})"


@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model in eval mode on its device, with what turns inputs into its tensors."""

    name: str
    kind: Kind
    model: Any  # transformers.PreTrainedModel
    tokenizer: Any | None  # text models
    processor: Any | None  # vision models: the image processor
    device: str
    description: str = ""
    meta: dict = field(default_factory=dict)  # the txviz.json of a project model
    attention: str = "txviz"  # "eager": its attention bypasses the capture function, read from its output
    check_gap: float | None = None  # self-check at load: largest output gap, capture vs its own attention
    dtype: Precision = "float32"  # of the weights (the self-check at load ran in float32)

    @property
    def check_warning(self) -> str:
        """A warning when the self-check at load found txviz's numbers differ from the model's own."""
        if self.check_gap is None or self.check_gap <= CHECK_TOLERANCE:
            return ""
        return (
            f"{self.name}: through txviz's attention its output differs from the model's own attention "
            f"by {self.check_gap:.2g} (more than {CHECK_TOLERANCE:g}): what txviz shows for it may be wrong."
        )

    @property
    def config(self):
        return self.model.config

    @property
    def n_layers(self) -> int:
        cfg = self.config
        return getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "encoder_layers", 0)

    @property
    def n_heads(self) -> int:
        cfg = self.config
        return getattr(cfg, "num_attention_heads", None) or getattr(cfg, "encoder_attention_heads", 0)

    @property
    def n_ctx(self) -> int:
        """Longest input the model takes, in tokens."""
        limits = [getattr(self.config, "max_position_embeddings", None)]
        if self.tokenizer is not None:
            limits.append(getattr(self.tokenizer, "model_max_length", None))
        limits = [n for n in limits if isinstance(n, int) and 0 < n < 10**7]
        return min(limits) if limits else 512

    @property
    def is_causal(self) -> bool:
        return self.kind in ("decoder", "image-decoder")
