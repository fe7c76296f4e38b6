"""Teacher forcing against free running: the decoder fed the reference, or fed its own outputs.

In training the decoder reads the reference target shifted by one (teacher forcing): every step
sees a correct prefix, so one pass scores all steps. At inference it reads its own outputs (free
running): after its first mistake every later step sees a prefix it was never trained on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import UserError, require_kind
from txviz.core.running import run
from txviz.core.tokens import readable_tokens
from txviz.models import LoadedModel
from txviz.seq2seq.decoding import _banned, _start_and_end, encode_source, greedy_ids

DEFAULT_SOURCE = "fifth of may nineteen forty five"  # outside the training years: it says 1955
DEFAULT_REFERENCE = "1945-05-05"
MAX_REFERENCE_TOKENS = 64


class TeacherForcingError(UserError):
    """A reference the model cannot be fed, with a message fit for the user."""


@dataclass(frozen=True)
class ForcingStep:
    """Step t under both regimes: what the decoder read last, and what it predicted."""

    index: int
    reference: str  # the reference token of this step ("" past the reference's end)
    forced_input: str  # teacher forcing: the reference token before this step
    forced_prediction: str
    forced_reference_probability: float  # p(reference token | source, reference prefix)
    free_input: str  # free running: the model's own previous token
    free_prediction: str
    free_reference_probability: float  # p(reference token | source, own prefix); nan past its end


@dataclass(frozen=True)
class ForcingComparison:
    """Both runs step by step, and the first step whose free-running output left the reference."""

    steps: tuple[ForcingStep, ...]
    forced_text: str  # the teacher-forced predictions joined: what each step would have said
    free_text: str  # the free-running output
    divergence: int | None  # first step where free running's prediction differs from the reference
    notice: str = ""

    @property
    def forced_correct(self) -> int:
        return sum(s.forced_prediction == s.reference for s in self.steps if s.reference)


def _log_probs(model, source_ids, decoder_inputs: list[int], banned: list[int]) -> torch.Tensor:
    """Next-token log-probabilities at every position of one decoder pass; (T, V)."""
    out = run(
        model,
        outputs=("logits",),
        input_ids=source_ids,
        attention_mask=torch.ones_like(source_ids),
        decoder_input_ids=torch.tensor([decoder_inputs], device=source_ids.device),
        use_cache=False,
    )
    logits = out.logits[0].float()
    logits[:, banned] = float("-inf")
    return torch.log_softmax(logits, dim=-1)


@torch.no_grad()
def compare(loaded: LoadedModel, source: str, reference: str) -> ForcingComparison:
    """Teacher-forced and free-running greedy decoding of one source, against a reference."""
    require_kind(loaded, ("encoder-decoder",), "compare teacher forcing with free running")
    if not reference or not reference.strip():
        raise TeacherForcingError("The reference is empty: type the output you expect, e.g. 1945-05-05.")
    model, tokenizer = loaded.model, loaded.tokenizer
    source_ids, notice = encode_source(loaded, source)
    start, ends = _start_and_end(loaded)
    banned = _banned(loaded, start, ends)
    reference_ids = tokenizer(reference.strip())["input_ids"]  # ends with the end token
    if tokenizer.unk_token_id in reference_ids:
        raise TeacherForcingError("The reference holds tokens the model cannot write: use digits and '-'.")
    if len(reference_ids) > MAX_REFERENCE_TOKENS:
        raise TeacherForcingError(f"The reference is longer than {MAX_REFERENCE_TOKENS} tokens.")
    forced = _log_probs(model, source_ids, [start, *reference_ids[:-1]], banned)  # (R, V)
    encoder_out = run(
        model,
        outputs=("output",),
        part="encoder",
        input_ids=source_ids,
        attention_mask=torch.ones_like(source_ids),
    ).output
    free_ids, _ = greedy_ids(
        model, encoder_out, torch.ones_like(source_ids), start, ends, banned, len(reference_ids) + 8
    )
    free = _log_probs(model, source_ids, free_ids[:-1], banned)  # (F, V)

    def text(ids: list[int]) -> list[str]:
        return list(readable_tokens(tokenizer, ids)[0]) if ids else []

    n_steps = max(len(reference_ids), len(free_ids) - 1)
    ref_tokens, forced_best = text(reference_ids), text(forced.argmax(-1).tolist())
    free_inputs, free_best = text(free_ids[:-1]), text(free_ids[1:])
    forced_inputs = text([start, *reference_ids[:-1]])
    steps, divergence = [], None
    for t in range(n_steps):
        in_ref, in_free = t < len(reference_ids), t < len(free_ids) - 1
        ref_id = reference_ids[t] if in_ref else None
        step = ForcingStep(
            index=t,
            reference=ref_tokens[t] if in_ref else "",
            forced_input=forced_inputs[t] if in_ref else "",
            forced_prediction=forced_best[t] if in_ref else "",
            forced_reference_probability=float(forced[t, ref_id].exp()) if in_ref else float("nan"),
            free_input=free_inputs[t] if in_free else "",
            free_prediction=free_best[t] if in_free else "",
            free_reference_probability=float(free[t, ref_id].exp()) if in_ref and in_free else float("nan"),
        )
        if divergence is None and (not in_ref or not in_free or free_ids[t + 1] != ref_id):
            divergence = t
        steps.append(step)
    return ForcingComparison(
        steps=tuple(steps),
        forced_text=tokenizer.decode(forced.argmax(-1).tolist(), skip_special_tokens=True),
        free_text=tokenizer.decode(free_ids[1:], skip_special_tokens=True),
        divergence=divergence,
        notice=notice,
    )


def step_rows(comparison: ForcingComparison) -> list[dict]:
    """The comparison as a table, one row per step."""
    return [
        {
            "step": s.index,
            "reference": s.reference,
            "forced: reads": s.forced_input,
            "forced: predicts": s.forced_prediction,
            "forced: p(reference)": None
            if np.isnan(s.forced_reference_probability)
            else s.forced_reference_probability,
            "free: reads": s.free_input,
            "free: predicts": s.free_prediction,
            "free: p(reference)": None
            if np.isnan(s.free_reference_probability)
            else s.free_reference_probability,
        }
        for s in comparison.steps
    ]
