"""What an intervention is judged by: a number read from the next-token logits of the last position."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from txviz.core.errors import UserError, require_kind
from txviz.core.tokens import readable_tokens
from txviz.models import LoadedModel

MetricKind = Literal["logit", "probability", "log_probability", "logit_difference"]
KINDS: tuple[MetricKind, ...] = ("logit_difference", "probability", "log_probability", "logit")
LABELS = {
    "logit_difference": "logit difference (answer - wrong)",
    "probability": "probability of the answer",
    "log_probability": "log-probability of the answer",
    "logit": "logit of the answer",
}


@dataclass(frozen=True)
class Metric:
    """A next-token metric: one number per batch row from logits (B, V) of the position read."""

    kind: MetricKind
    answer: int  # token id
    answer_token: str  # readable
    wrong: int | None = None  # token id, for the logit difference
    wrong_token: str = ""
    notice: str = ""  # non-empty when an answer was cut to its first token

    @property
    def label(self) -> str:
        if self.kind == "logit_difference":
            return f"logit('{self.answer_token}') - logit('{self.wrong_token}')"
        return f"{LABELS[self.kind].rsplit(' ', 1)[0]} '{self.answer_token}'"

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        """(B, V) logits -> (B,) metric, in float32, differentiable."""
        logits = logits.float()
        if self.kind == "logit":
            return logits[:, self.answer]
        if self.kind == "logit_difference":
            return logits[:, self.answer] - logits[:, self.wrong]
        log_probs = logits.log_softmax(-1)[:, self.answer]
        return log_probs.exp() if self.kind == "probability" else log_probs


def require_next_token(loaded: LoadedModel) -> None:
    """Refuse models without a next-token head (encoders) with a message that says what to pick."""
    require_kind(loaded, ("decoder",), "score a next token (interventions read the next-token logits)")


def first_token(loaded: LoadedModel, text: str, role: str = "answer") -> tuple[int, str, str]:
    """(id, readable token, notice) of the first token of an answer; the notice says when it had more."""
    if not text:  # a space or a line break alone is a token and a fair answer
        raise UserError(f"The {role} is empty: type the token the model should predict, e.g. ' Paris'.")
    ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise UserError(f"The {role} {text!r} gives no tokens.")
    tokens, _ = readable_tokens(loaded.tokenizer, ids)
    notice = ""
    if len(ids) > 1:
        notice = (
            f"The {role} {text!r} is {len(ids)} tokens ({', '.join(repr(t) for t in tokens)}); "
            f"the metric uses its first token {tokens[0]!r}."
        )
    return int(ids[0]), tokens[0], notice


def make_metric(loaded: LoadedModel, kind: MetricKind, answer: str, wrong: str = "") -> Metric:
    """The metric of ``kind`` for an answer (and a wrong answer for the logit difference)."""
    require_next_token(loaded)
    if kind not in KINDS:
        raise UserError(f"Unknown metric {kind!r}; choose from {', '.join(KINDS)}.")
    answer_id, answer_token, notice = first_token(loaded, answer)
    wrong_id, wrong_token = None, ""
    if kind == "logit_difference":
        wrong_id, wrong_token, more = first_token(loaded, wrong, "wrong answer")
        notice = " ".join(n for n in (notice, more) if n)
        if wrong_id == answer_id:
            raise UserError(
                f"The answer and the wrong answer both start with {answer_token!r}: their logit "
                "difference is always 0. Choose answers whose first tokens differ."
            )
    return Metric(kind, answer_id, answer_token, wrong_id, wrong_token, notice)


def recovered(patched, clean: float, corrupt: float):
    """Recovered fraction of the metric: 0 is the corrupted run's value, 1 the clean run's."""
    gap = clean - corrupt
    if abs(gap) < 1e-6:
        raise UserError(
            "The clean and corrupted prompts give the same metric, so there is nothing to recover: "
            "change the corrupted prompt (or the answers) so that the model's answer changes."
        )
    return (patched - corrupt) / gap
