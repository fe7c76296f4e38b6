"""Loading any Hugging Face model folder or hub id through the capture attention function."""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import torch

from txviz.core import capture
from txviz.core.loaded import LoadedModel, ModelLoadError

Progress = Callable[[str], None]

VISION_TYPES = {"vit", "deit", "dinov2", "dinov2_with_registers", "beit", "vit_msn", "vit_mae", "dino"}
HUB_ID_HINT = "Names are 'minilm', 'smollm2', a project model, a Hugging Face id or a local folder."


def default_device(device: str = "auto") -> str:
    """'auto' is CUDA when present, else CPU; anything else is checked and kept."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError("CUDA was asked for, but this machine has no CUDA GPU. Use 'cpu'.")
    return device


def detect_kind(config) -> str:
    """encoder, decoder, encoder-decoder or vision, read from a transformers config."""
    architectures = getattr(config, "architectures", None) or []
    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder"
    if config.model_type in VISION_TYPES or (
        hasattr(config, "patch_size") and hasattr(config, "num_channels")
    ):
        return "vision"
    if getattr(config, "is_decoder", False) or any(
        a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures
    ):
        return "decoder"
    return "encoder"


def _auto_class(kind: str, config):
    """The transformers Auto class that builds the useful head for this kind of model."""
    import transformers as tf

    architectures = getattr(config, "architectures", None) or []
    if kind in ("decoder", "image-decoder"):  # an image decoder is a causal LM over pixel tokens
        return tf.AutoModelForCausalLM
    if kind == "encoder-decoder":
        return tf.AutoModelForSeq2SeqLM
    if kind == "vision" and any(a.endswith("ForImageClassification") for a in architectures):
        return tf.AutoModelForImageClassification
    return tf.AutoModel


HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")
HEAD_FIELDS = ("num_attention_heads", "encoder_attention_heads", "n_head", "num_heads")


def hub_offline() -> bool:
    """True in huggingface_hub's offline mode (HF_HUB_OFFLINE=1), or when its endpoint does not answer."""
    from huggingface_hub import constants

    return constants.is_offline_mode() or not _endpoint_answers(constants.ENDPOINT)


def _endpoint_answers(endpoint: str, timeout: float = 2.0) -> bool:
    """Whether the Hub's host takes a connection within two seconds.

    Ours, because huggingface_hub retries an unreachable Hub five times with back-off (25 s on a
    machine without a network) before it raises LocalEntryNotFoundError."""
    url = urlsplit(endpoint)
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _hub_options(source: str) -> dict:
    """from_pretrained options for a source: local folders as they are, hub ids cache-first."""
    if os.path.isdir(source):
        if not os.path.exists(os.path.join(source, "config.json")):
            raise ModelLoadError(f"The folder '{source}' holds no model: it has no config.json.")
        return {}
    if not HUB_ID.match(source):
        raise ModelLoadError(
            f"'{source}' is neither a known model, a local folder, nor a Hub id. {HUB_ID_HINT}"
        )
    import transformers as tf

    try:  # already downloaded: no network needed
        tf.AutoConfig.from_pretrained(source, local_files_only=True)
        return {"local_files_only": True}
    except (OSError, ValueError):
        pass
    if hub_offline():
        raise ModelLoadError(
            f"'{source}' is not a known model or folder, and the Hugging Face Hub cannot be reached to "
            f"download it. Download it where there is a network, or give a local folder. {HUB_ID_HINT}"
        )
    return {}


def hub_error(error: BaseException) -> BaseException | None:
    """The huggingface_hub error behind a loading error: transformers re-raises them as OSError."""
    from huggingface_hub import errors

    hub_types = (
        errors.RepositoryNotFoundError,
        errors.LocalEntryNotFoundError,
        errors.OfflineModeIsEnabled,
        errors.HFValidationError,
        errors.HfHubHTTPError,
    )
    seen: BaseException | None = error
    while seen is not None and not isinstance(seen, hub_types):
        seen = seen.__cause__ or seen.__context__
    return seen


def _load_message(source: str, error: Exception) -> str:
    """What to tell the user, chosen by the type of huggingface_hub's error."""
    from huggingface_hub import errors

    cause = hub_error(error)
    if isinstance(cause, errors.GatedRepoError):
        return (
            f"'{source}' is gated on the Hugging Face Hub: accept its terms there and log in "
            "(`hf auth login`), or give a local folder."
        )
    if isinstance(cause, errors.RepositoryNotFoundError | errors.HFValidationError):
        return f"'{source}' is neither a known model, a local folder, nor a Hub model. {HUB_ID_HINT}"
    if isinstance(cause, errors.LocalEntryNotFoundError | errors.OfflineModeIsEnabled):
        return (
            f"'{source}' is not in the local cache, and the Hugging Face Hub cannot be reached to "
            f"download it. Download it on a machine with a network, or give a local folder. {HUB_ID_HINT}"
        )
    text = str(error)
    return f"Could not load '{source}': {text.splitlines()[0] if text else type(error).__name__}"


def load_pretrained(
    name: str,
    source: str,
    device: str,
    description: str = "",
    meta: dict | None = None,
    kind: str | None = None,
    **kwargs,
) -> LoadedModel:
    """Load a model folder or hub id with the capture attention function, in eval mode."""
    import transformers as tf

    capture.register()
    kwargs = _hub_options(source) | kwargs
    try:
        config = tf.AutoConfig.from_pretrained(source, trust_remote_code=False, **kwargs)
    except (OSError, ValueError) as error:
        raise ModelLoadError(_load_message(source, error)) from error
    text_config = getattr(config, "text_config", None) or config
    if not any(getattr(text_config, f, None) or getattr(config, f, None) for f in HEAD_FIELDS):
        raise ModelLoadError(
            f"'{source}' is a {config.model_type} model with no attention heads (a CNN, say): "
            "txviz shows attention, so it has nothing to show here."
        )
    kind = kind or detect_kind(config)
    try:
        model = _auto_class(kind, config).from_pretrained(
            source,
            attn_implementation=capture.IMPLEMENTATION,
            trust_remote_code=False,
            dtype=torch.float32,
            **kwargs,
        )
    except ValueError as error:
        if "attention" in str(error).lower() or "Unrecognized" in str(error):
            raise ModelLoadError(
                f"'{source}' ({config.model_type}) does not route attention through transformers' "
                "attention interface (it may have no attention at all, like a CNN), so txviz "
                "cannot show its attention."
            ) from error
        raise ModelLoadError(_load_message(source, error)) from error
    except OSError as error:
        raise ModelLoadError(_load_message(source, error)) from error
    model.eval().to(device)
    tokenizer = processor = None
    try:
        if kind == "vision":
            processor = tf.AutoImageProcessor.from_pretrained(source, **kwargs)
        elif kind != "image-decoder":  # its tokens are pixels: no tokenizer
            tokenizer = tf.AutoTokenizer.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as error:
        raise ModelLoadError(
            f"'{source}' has a model but no usable tokenizer or processor: {error}"
        ) from error
    return LoadedModel(name, kind, model, tokenizer, processor, device, description, meta or {})


def read_meta(folder: Path) -> dict:
    """A project model's txviz.json (kind, description, measured accuracy), or {}."""
    path = folder / "txviz.json"
    return json.loads(path.read_text()) if path.exists() else {}


def count_parameters(folder: Path) -> int:
    """Number of weights in a folder's safetensors files, read from their headers only."""
    from safetensors import safe_open

    total = 0
    for path in folder.glob("*.safetensors"):
        with safe_open(str(path), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 - safe_open handles are not iterable
                shape = f.get_slice(key).get_shape()
                total += int(torch.tensor(shape).prod()) if shape else 1
    return total


def human_count(n: int) -> str:
    """22_713_216 -> '22.7M'."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)
