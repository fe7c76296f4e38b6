"""Choosing the next token: greedy, and transformers' temperature, top-k and top-p warpers, step by step."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from txviz.core.candidates import OneHot
from txviz.core.errors import UserError

MAX_TEMPERATURE = 5.0  # past this every distribution looks uniform; nothing left to teach


@dataclass(frozen=True)
class SamplingSettings:
    """How the next token is chosen; the defaults are greedy decoding."""

    temperature: float = 0.0  # 0 means greedy (the limit of temperature -> 0)
    top_k: int = 0  # 0 means off
    top_p: float = 1.0  # 1.0 means off
    seed: int | None = 0  # None: a fresh random run each time

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def validate(self) -> None:
        """Raise UserError with a message a user can act on."""
        if not 0.0 <= self.temperature <= MAX_TEMPERATURE:
            raise UserError(f"Temperature must be between 0 and {MAX_TEMPERATURE} (0 is greedy).")
        if self.top_k < 0:
            raise UserError("Top-k must be 0 (off) or a positive number of tokens.")
        if not 0.0 < self.top_p <= 1.0:
            raise UserError("Top-p must be above 0 and at most 1 (1 is off).")

    def describe(self) -> str:
        """Short human text, e.g. 'temperature 0.8, top-k 40'."""
        if self.greedy:
            return "greedy"
        parts = [f"temperature {self.temperature:g}"]
        if self.top_k:
            parts.append(f"top-k {self.top_k}")
        if self.top_p < 1.0:
            parts.append(f"top-p {self.top_p:g}")
        return ", ".join(parts)


@dataclass(frozen=True, eq=False)
class Choice:
    """One sampling step: the token chosen and each stage of the distribution that led to it."""

    token_id: int
    computed: tuple[tuple[str, torch.Tensor], ...]  # (name, probabilities (V,) float32), in order
    greedy: bool = False  # a last "greedy" stage, one-hot on the token, follows: built only when read

    @cached_property
    def stages(self) -> tuple[tuple[str, torch.Tensor], ...]:
        """Every stage as a (V,) vector, greedy's one-hot included."""
        if not self.greedy:
            return self.computed
        return (*self.computed, ("greedy", OneHot(self.token_id).tensor(self.computed[-1][1])))

    @property
    def shown(self) -> tuple[tuple[str, torch.Tensor | OneHot], ...]:
        """The stages as the candidates read them: greedy's one-hot as a OneHot, never a vector."""
        return (*self.computed, ("greedy", OneHot(self.token_id))) if self.greedy else self.computed

    @property
    def before(self) -> torch.Tensor:
        """Model's own distribution: softmax of the raw logits."""
        return self.computed[0][1]

    @property
    def after(self) -> torch.Tensor:
        """Distribution actually sampled from (one-hot for greedy)."""
        return self.stages[-1][1]


def greedy_token(logits: torch.Tensor) -> int:
    """Index of the highest logit (the lowest index wins a tie, as in torch.argmax)."""
    return int(logits.argmax(dim=-1))


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Logits / temperature (transformers' TemperatureLogitsWarper): below 1 sharpens, above 1 flattens."""
    from transformers.generation.logits_process import TemperatureLogitsWarper

    if temperature <= 0:
        raise UserError("Temperature must be positive here; 0 is handled as greedy.")
    return TemperatureLogitsWarper(float(temperature))(None, logits.float())


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the k highest logits (ties with the k-th kept too), -inf elsewhere; k = 0 is off.

    transformers' TopKLogitsWarper; any leading dimensions, the vocabulary last."""
    from transformers.generation.logits_process import TopKLogitsWarper

    if k <= 0 or k >= logits.shape[-1]:
        return logits
    return TopKLogitsWarper(int(k))(None, logits)


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose probability reaches p (nucleus).

    transformers' TopPLogitsWarper, which always keeps the most likely token. Among tokens of equal
    logit at the edge of the set, which ones stay is up to torch's sort, as in any nucleus sampler."""
    from transformers.generation.logits_process import TopPLogitsWarper

    if p >= 1.0:
        return logits
    rows = logits.reshape(-1, logits.shape[-1])  # the warper works on (batch, vocabulary)
    return TopPLogitsWarper(float(p))(None, rows).reshape(logits.shape)


def make_generator(seed: int | None) -> torch.Generator:
    """CPU generator so a seed gives the same tokens on any device."""
    generator = torch.Generator(device="cpu")
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    return generator


def choose_greedy(logits: torch.Tensor) -> list[Choice]:
    """choose(row, greedy settings) for every row of logits (B, V) at once: one softmax, one argmax."""
    logits = logits.detach().float().cpu()
    probs = torch.softmax(logits, dim=-1)
    # max's indices are argmax's (the first of equal maxima, a NaN first), in a faster kernel on rows.
    tokens = logits.max(dim=-1).indices.tolist()
    return [Choice(token, (("model", probs[b]),), greedy=True) for b, token in enumerate(tokens)]


def choose(
    logits: torch.Tensor,
    settings: SamplingSettings,
    generator: torch.Generator | None = None,
) -> Choice:
    """Pick the next token from logits (V,) and keep every reshaped distribution for display."""
    logits = logits.detach().float().cpu().reshape(-1)  # (V,)
    stages: list[tuple[str, torch.Tensor]] = [("model", torch.softmax(logits, dim=-1))]
    if settings.greedy:
        return Choice(greedy_token(logits), tuple(stages), greedy=True)
    shaped = logits
    if settings.temperature != 1.0:
        shaped = apply_temperature(shaped, settings.temperature)
        stages.append((f"temperature {settings.temperature:g}", torch.softmax(shaped, dim=-1)))
    if settings.top_k:
        shaped = top_k_filter(shaped, settings.top_k)
        stages.append((f"top-k {settings.top_k}", torch.softmax(shaped, dim=-1)))
    if settings.top_p < 1.0:
        shaped = top_p_filter(shaped, settings.top_p)
        stages.append((f"top-p {settings.top_p:g}", torch.softmax(shaped, dim=-1)))
    if generator is None:
        generator = make_generator(settings.seed)
    token = int(torch.multinomial(stages[-1][1], 1, generator=generator))
    return Choice(token, tuple(stages))
