"""Soft vs hard attention on a real model: one text under softmax, temperature, top-k, sparsemax, argmax."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core import attention
from txviz.core.attention import Normalizer
from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.running import run, step
from txviz.core.trace import AttentionTrace
from txviz.core.tracing import TEXT_KINDS, encode, trace_text
from txviz.models import LoadedModel

# Five full traces of SmolLM2 (30 layers x 9 heads) stay near 100 MB of float32 at this length.
MAX_TOKENS = 96
MAX_NEW_TOKENS = 24
NAMES = ("softmax", "temperature", "top-k", "sparsemax", "hard")


@dataclass(frozen=True)
class NormalizerSettings:
    """The parameters of the normalizers that have one."""

    temperature: float = 0.5
    k: int = 2

    def check(self, n_tokens: int) -> None:
        """Raise ValueError with a message for the user when a parameter cannot apply."""
        if not np.isfinite(self.temperature) or self.temperature <= 0:
            raise UserError(
                f"Temperature must be positive (got {self.temperature:g}); "
                "hard attention is the limit as it goes to 0."
            )
        if self.k < 1:
            raise UserError(f"Top-k needs k of at least 1 (got {self.k}).")
        if self.k > n_tokens:
            raise UserError(
                f"k = {self.k} is larger than the text's {n_tokens} tokens: top-k would keep every "
                f"key. Choose k of at most {n_tokens}, or a longer text."
            )

    def normalizers(self) -> dict[str, Normalizer]:
        """Name -> function from masked scores to weights, in the order shown."""
        return {
            "softmax": attention.softmax,
            "temperature": attention.temperature_softmax(self.temperature),
            "top-k": attention.top_k(self.k),
            "sparsemax": attention.sparsemax,
            "hard": attention.hard,
        }

    def label(self, name: str) -> str:
        """A readable title for one normalizer, with its parameter."""
        return {
            "temperature": f"softmax, T = {self.temperature:g}",
            "top-k": f"top-{self.k}",
            "hard": "hard (argmax)",
        }.get(name, name)


@dataclass(frozen=True, eq=False)
class Comparison:
    """One text through one model under each normalizer (applied in every layer)."""

    settings: NormalizerSettings
    traces: dict[str, AttentionTrace]  # name -> trace, weights [layer, head, query, key]

    @property
    def labels(self) -> dict[str, str]:
        return {name: self.settings.label(name) for name in self.traces}

    def entropy(self) -> dict[str, np.ndarray]:
        """Name -> mean row entropy in nats [layer, head]; 0 for one-hot rows."""
        return {
            name: attention.entropy(torch.from_numpy(t.weights)).mean(dim=-1).numpy()
            for name, t in self.traces.items()
        }

    def kept_fraction(self) -> dict[str, np.ndarray]:
        """Name -> mean fraction of visible keys given non-zero weight [layer, head]."""
        result = {}
        for name, trace in self.traces.items():
            n_query, n_key = trace.weights.shape[-2:]
            # a causal row i sees i + 1 keys; an encoder row sees them all
            visible = (
                np.arange(1, n_query + 1) + (n_key - n_query)
                if trace.kind == "causal"
                else np.full(n_query, n_key)
            )
            result[name] = ((trace.weights > 0).sum(axis=-1) / visible).mean(axis=-1)
        return result


def compare(loaded: LoadedModel, text: str, settings: NormalizerSettings) -> Comparison:
    """Trace ``text`` once per normalizer; layer 0 sees equal scores, later layers diverge."""
    n_tokens = len(encode(loaded, text, MAX_TOKENS).ids)
    settings.check(n_tokens)
    traces = {
        name: trace_text(loaded, text, max_tokens=MAX_TOKENS, normalize=normalize)
        for name, normalize in settings.normalizers().items()
    }
    return Comparison(settings, traces)


@dataclass(frozen=True)
class OutputEffect:
    """What each normalizer does to the model's output, against plain softmax."""

    kind: str  # "decoder": continuations and loss; "encoder": embedding similarity
    continuations: dict[str, str]  # name -> greedy continuation of the text (decoders)
    loss: dict[str, float | None]  # name -> mean next-token loss on the text, nats; None if 1 token
    similarity: dict[str, float]  # name -> cosine of the sentence embedding to softmax's (encoders)

    def table(self, labels: dict[str, str]) -> list[dict[str, object]]:
        """Rows for a decoder's table: normalizer, greedy continuation, loss on the text."""
        return [
            {
                "normalizer": labels.get(name, name),
                "greedy continuation of the text": text,
                "mean next-token loss on the text (nats)": (
                    None if self.loss[name] is None else round(self.loss[name], 3)
                ),
            }
            for name, text in self.continuations.items()
        ]


def output_effect(
    loaded: LoadedModel, text: str, settings: NormalizerSettings, new_tokens: int = 8
) -> OutputEffect:
    """Greedy continuations and loss (decoder) or embedding similarity (encoder) per normalizer."""
    require_kind(loaded, TEXT_KINDS, "compare attention normalizers on a text")
    ids = encode(loaded, text, MAX_TOKENS).ids
    settings.check(len(ids))
    normalizers = settings.normalizers()
    if loaded.kind == "decoder":
        if not 1 <= new_tokens <= MAX_NEW_TOKENS:
            raise UserError(f"New tokens must be between 1 and {MAX_NEW_TOKENS} (got {new_tokens}).")
        continuations, losses = {}, {}
        for name, normalize in normalizers.items():
            generated, losses[name] = _greedy_with_loss(loaded, ids, normalize, new_tokens)
            continuations[name] = loaded.tokenizer.decode(generated, skip_special_tokens=True)
        return OutputEffect("decoder", continuations, losses, {})
    embeddings = {name: _sentence_embedding(loaded, ids, f) for name, f in normalizers.items()}
    reference = embeddings["softmax"]
    similarity = {
        name: float(torch.nn.functional.cosine_similarity(e, reference, dim=0))
        for name, e in embeddings.items()
    }
    return OutputEffect("encoder", {}, {}, similarity)


def _greedy_with_loss(
    loaded: LoadedModel, ids: list[int], normalize: Normalizer, new_tokens: int
) -> tuple[list[int], float | None]:
    """Greedy new token ids under one normalizer, and the mean next-token loss on ``ids``."""
    from transformers import DynamicCache  # heavy import, only when generating

    model = loaded.model
    cache = DynamicCache(config=model.config)
    prompt = torch.tensor([ids], device=loaded.device)  # (1, T)
    generated: list[int] = []
    settings = CaptureSettings(normalize=normalize)
    logits = step(model, settings, input_ids=prompt, past_key_values=cache).logits  # (1, T, V)
    loss = (
        float(torch.nn.functional.cross_entropy(logits[0, :-1].float(), prompt[0, 1:]))
        if len(ids) > 1
        else None  # one token: nothing to predict within the text
    )
    for _ in range(new_tokens):
        token = int(logits[0, -1].argmax())
        generated.append(token)
        next_input = torch.tensor([[token]], device=loaded.device)
        logits = step(model, settings, input_ids=next_input, past_key_values=cache).logits
    return generated, loss


def _sentence_embedding(loaded: LoadedModel, ids: list[int], normalize: Normalizer) -> torch.Tensor:
    """Mean of the last hidden states over tokens (how all-MiniLM-L6-v2 pools), shape (d_model,)."""
    input_ids = torch.tensor([ids], device=loaded.device)
    hidden = run(loaded.model, CaptureSettings(normalize=normalize), ("hidden",), input_ids=input_ids).hidden
    return hidden[0].float().mean(dim=0).cpu()
