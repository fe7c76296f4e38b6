"""The shipped captioners: saved and loaded as safetensors with their sizes and measured scores."""

from __future__ import annotations

import json
from pathlib import Path

from txviz.captioning.model import METHODS, Captioner, CaptionerConfig
from txviz.core import paths
from txviz.core.errors import UserError

FOLDER = paths.MODELS / "digits-captioner"
META = "txviz.json"


def save(models: dict[str, Captioner], meta: dict, folder: Path = FOLDER) -> None:
    from safetensors.torch import save_model

    folder.mkdir(parents=True, exist_ok=True)
    for method, model in models.items():
        save_model(model, str(folder / f"{method}.safetensors"))
    (folder / META).write_text(json.dumps(meta, indent=2) + "\n")


def read_meta(folder: Path = FOLDER) -> dict:
    path = folder / META
    if not path.exists():
        raise UserError(f"No trained captioner in {folder}: run `python -m txviz train captioner`.")
    return json.loads(path.read_text())


def load(folder: Path = FOLDER) -> tuple[dict[str, Captioner], dict]:
    """Both captioners in eval mode, and the metadata of the run that trained them."""
    from safetensors.torch import load_model

    meta = read_meta(folder)
    models = {}
    for method in METHODS:
        model = Captioner(CaptionerConfig(**meta["configs"][method]))
        load_model(model, str(folder / f"{method}.safetensors"))
        models[method] = model.eval()
    return models, meta
