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

from txviz.core import capture, layouts
from txviz.core.loaded import PRECISIONS, LoadedModel, ModelLoadError

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


def precisions(device: str) -> tuple[str, ...]:
    """Weight precisions offered on a device: float16 needs a GPU (PyTorch's CPU kernels for it are
    slow or missing), bfloat16 runs on both and halves the weights' memory."""
    return PRECISIONS if device.startswith("cuda") else ("float32", "bfloat16")


def check_precision(dtype: str, device: str) -> torch.dtype:
    """The torch dtype of a precision name, refused clearly where it cannot run."""
    if dtype not in PRECISIONS:
        raise ModelLoadError(f"Unknown precision '{dtype}': choose one of {', '.join(PRECISIONS)}.")
    if dtype not in precisions(device):
        raise ModelLoadError(f"{dtype} needs a CUDA GPU; on {device} choose float32 or bfloat16.")
    return getattr(torch, dtype)


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
    """What to tell the user: by the type of huggingface_hub's error, else by transformers' own words (no typed error)."""
    from huggingface_hub import errors

    cause = hub_error(error)
    if isinstance(cause, errors.GatedRepoError):
        return (
            f"'{source}' is gated on the Hugging Face Hub: accept its terms there and log in "
            "(`hf auth login`), or give a local folder."
        )
    text = str(error)
    if "no file named" in text:
        return (
            f"'{source}' holds a config.json but no weights (model.safetensors or pytorch_model.bin): "
            "save the model's weights into the folder too."
        )
    if "does not recognize this architecture" in text:
        import transformers

        return (
            f"'{source}' is a model family the installed transformers ({transformers.__version__}) does not "
            "know: upgrade transformers, or choose a model of a known family (see docs/model-families.md)."
        )
    if "custom code" in text or "trust_remote_code" in text:
        return (
            f"'{source}' needs its own Python code to load (a remote-code model). txviz loads models with "
            "trust_remote_code off, so it runs no code that comes with a model; choose a model "
            "transformers itself knows."
        )
    if isinstance(cause, errors.RepositoryNotFoundError | errors.HFValidationError):
        return f"'{source}' is neither a known model, a local folder, nor a Hub model. {HUB_ID_HINT}"
    if isinstance(cause, errors.LocalEntryNotFoundError | errors.OfflineModeIsEnabled):
        return (
            f"'{source}' is not in the local cache, and the Hugging Face Hub cannot be reached to "
            f"download it. Download it on a machine with a network, or give a local folder. {HUB_ID_HINT}"
        )
    return f"Could not load '{source}': {text.splitlines()[0] if text else type(error).__name__}"


def load_pretrained(
    name: str,
    source: str,
    device: str,
    description: str = "",
    meta: dict | None = None,
    kind: str | None = None,
    dtype: str = "float32",
    **kwargs,
) -> LoadedModel:
    """Load a model folder or hub id with the capture attention function, in eval mode.

    The self-check at load runs in float32 (on the CPU when a reduced ``dtype`` is asked): in
    bfloat16 two correct attention implementations already differ by several logits on SmolLM2, so
    only float32 tells a wrong attention from rounding. The weights are reduced after it.
    """
    import transformers as tf

    reduced = check_precision(dtype, device)
    home = device if dtype == "float32" else "cpu"
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
    auto = _auto_class(kind, config)
    attention = capture.IMPLEMENTATION
    try:
        model = _from_pretrained(auto, source, config, attention, kwargs)
    except (KeyError, ValueError) as error:  # a family with its own attention code (Falcon, GPT-J...)
        if isinstance(error, ValueError) and not _about_attention(error):
            raise ModelLoadError(_load_message(source, error)) from error
        attention = "eager"
        model = _from_pretrained(auto, source, config, attention, kwargs)
    model.eval().to(home)
    probe = probe_inputs(model, kind, home)
    gap = 0.0
    if attention != "eager":
        recorded = _captured(model, probe)
        layouts.remember_probe(model, list(recorded.attention))  # discovery places heads from this pass
        if recorded.attention:
            gap = self_check(model, probe, _output_of(recorded.output))
        else:  # it accepted the capture function but never calls it (Bloom, MPNet, DeBERTa-v2)
            attention = "eager"
            model = _from_pretrained(auto, source, config, attention, kwargs).eval().to(home)
    if dtype != "float32":
        reduce_precision(model, reduced).to(device)
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
    _check_vocabulary(source, model, tokenizer)
    return LoadedModel(
        name, kind, model, tokenizer, processor, device, description, meta or {}, attention, gap, dtype
    )


def reduce_precision(model, dtype: torch.dtype):
    """``model`` with its parameters in ``dtype``, as ``from_pretrained(dtype=...)`` would load them.

    Parameters only: buffers such as rotary frequencies stay float32 (``model.to(dtype)`` would round
    them too, moving SmolLM2's bfloat16 logits by 2), and so do the modules the model's class keeps
    in float32 by transformers' rule: ``_keep_in_fp32_modules`` in float16 (T5's ``wo``),
    ``_keep_in_fp32_modules_strict`` in both.
    """
    keep = set(getattr(model, "_keep_in_fp32_modules_strict", None) or ())
    if dtype == torch.float16:
        keep |= set(getattr(model, "_keep_in_fp32_modules", None) or ())
    with torch.no_grad():
        for name, parameter in model.named_parameters():  # a tied weight is listed once
            if parameter.is_floating_point() and not keep & set(name.split(".")):
                parameter.data = parameter.data.to(dtype)
    model.config.dtype = dtype
    return model


def _about_attention(error: Exception) -> bool:
    return "attention" in str(error).lower() or "Unrecognized" in str(error)


def _from_pretrained(auto, source: str, config, attention: str, kwargs: dict):
    """The model of ``source`` with the given attention implementation, float32; load errors for users."""
    try:
        return auto.from_pretrained(
            source, attn_implementation=attention, trust_remote_code=False, dtype=torch.float32, **kwargs
        )
    except OSError as error:
        raise ModelLoadError(_load_message(source, error)) from error
    except RuntimeError as error:  # transformers' size-mismatch report
        raise ModelLoadError(
            f"'{source}': its weights do not match its config.json (a tensor of another shape than the "
            "config says, e.g. a changed hidden size). Save the config with the weights it belongs to."
        ) from error
    except (KeyError, ValueError):
        if attention != "eager":
            raise
        raise ModelLoadError(
            f"'{source}' ({config.model_type}) cannot be loaded with transformers' eager attention "
            "either, so txviz cannot show its attention."
        ) from None


def probe_inputs(model, kind: str, device: str) -> dict:
    """A few tokens (or one small image) to check a freshly loaded model with."""
    cfg = model.config
    if kind == "vision":
        size = getattr(cfg, "image_size", 224)
        size = size if isinstance(size, int) else size[0]
        return {"pixel_values": torch.zeros(1, getattr(cfg, "num_channels", 3), size, size, device=device)}
    vocab = getattr(cfg.get_text_config(), "vocab_size", None) or 8
    ids = torch.tensor([[i % vocab for i in (5, 7, 11, 13, 17, 19)]], device=device)
    probe = {"input_ids": ids}
    if kind == "encoder-decoder":
        probe["decoder_input_ids"] = ids[:, :3]
    return probe


def _captured(model, probe: dict):
    """The probe through the capture path, recording weights (the explicit computation, not SDPA)."""
    from txviz.core.running import probe as probe_forward

    return probe_forward(model, **probe)


def _output_of(output) -> torch.Tensor:
    for name in ("logits", "last_hidden_state"):
        value = getattr(output, name, None)
        if value is not None:
            return value.float()
    return output[0].float()


def self_check(model, probe: dict, ours: torch.Tensor) -> float | None:
    """Largest gap between ``ours`` (the probe's output through the capture path) and the output with
    the model's own attention.

    A future transformers release or an unusual model can then never show wrong attention silently.
    None when the model cannot switch to its own attention to compare.
    """
    from txviz.core.running import run

    for own in ("sdpa", "eager"):
        try:
            model.set_attn_implementation(own)
        except (ValueError, KeyError, ImportError):
            continue
        try:
            theirs = _output_of(run(model, outputs=("output",), **probe).output)
        finally:
            model.set_attn_implementation(capture.IMPLEMENTATION)
        return float((ours - theirs).abs().max())
    return None


def _check_vocabulary(source: str, model, tokenizer) -> None:
    """Refuse a tokenizer that makes ids the model's embedding does not have."""
    if tokenizer is None:
        return
    embedding = model.get_input_embeddings()
    rows = getattr(embedding, "num_embeddings", None)
    if rows is None:
        return
    ids = [i for i in tokenizer.get_vocab().values() if isinstance(i, int)]
    largest = max(ids, default=-1)
    if largest >= rows:
        raise ModelLoadError(
            f"'{source}': its tokenizer makes ids up to {largest:,}, but the model's embedding has only "
            f"{rows:,} rows, so some texts would fail or read the wrong vectors. Use the tokenizer saved "
            "with this model."
        )


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
