"""GPT's objective: with the causal mask, every position predicts the next token (one loss term each)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import require_kind
from txviz.core.running import run
from txviz.core.tokens import readable_tokens
from txviz.objectives.masked import ObjectiveError

MAX_TOKENS = 64


@dataclass(frozen=True)
class NextTokenObjective:
    """One teacher-forced pass: the probability of the actual next token at every position."""

    tokens: tuple[str, ...]  # the text's tokens, readable
    probabilities: np.ndarray  # (n - 1,) p(token t+1 | tokens 0..t)
    predicted: tuple[str, ...]  # the model's most probable next token at each position
    notice: str = ""

    @property
    def losses(self) -> np.ndarray:
        """-log p(actual next token): the n - 1 terms whose mean is the training loss."""
        return -np.log(np.maximum(self.probabilities, 1e-30))

    @property
    def mean_loss(self) -> float:
        return float(self.losses.mean())


def next_token_objective(loaded, text: str, max_tokens: int = MAX_TOKENS) -> NextTokenObjective:
    """Feed the whole text at once (teacher forcing) and read p(actual next token) at each position."""
    require_kind(loaded, ("decoder",), "predict the next token at every position")
    if not text or not text.strip():
        raise ObjectiveError("The text is empty: type a sentence.")
    ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
    notice = ""
    if len(ids) > max_tokens:
        ids, notice = (
            ids[:max_tokens],
            f"The text has {len(ids)} tokens; only the first {max_tokens} are used.",
        )
    if len(ids) < 2:
        raise ObjectiveError("The text has one token: there is no next token to predict. Type more.")
    input_ids = torch.tensor([ids], device=loaded.device)
    logits = run(loaded.model, outputs=("logits",), input_ids=input_ids).logits[0].float()  # (n, V)
    log_probs = torch.log_softmax(logits[:-1], dim=-1)  # position t predicts token t + 1
    chosen = log_probs[torch.arange(len(ids) - 1), torch.tensor(ids[1:], device=logits.device)]
    tokens, _ = readable_tokens(loaded.tokenizer, ids)
    predicted, _ = readable_tokens(loaded.tokenizer, log_probs.argmax(-1).tolist())
    return NextTokenObjective(tuple(tokens), chosen.exp().double().cpu().numpy(), tuple(predicted), notice)
