"""Registry of models: packaged pretrained ones, the project's tiny ones, any Hugging Face model."""

from txviz.core.loaded import KINDS, PRECISIONS, REDUCED_NOTE, LoadedModel, ModelInfo, ModelLoadError
from txviz.models.loading import default_device, detect_kind, precisions
from txviz.models.registry import available, cache_dir, load, names

__all__ = [
    "KINDS",
    "LoadedModel",
    "ModelInfo",
    "ModelLoadError",
    "PRECISIONS",
    "REDUCED_NOTE",
    "available",
    "cache_dir",
    "default_device",
    "detect_kind",
    "load",
    "names",
    "precisions",
]
