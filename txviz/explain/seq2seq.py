"""Why this output token, for an encoder-decoder: one decoding step attributed to the source tokens,
to set beside the step's cross-attention."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import require_kind
from txviz.core.running import run, run_module
from txviz.core.tokens import special_flags
from txviz.explain.attribution import Target, attribute_embeddings, check_target
from txviz.explain.gradients import reference_embeddings
from txviz.explain.methods import IG_STEPS
from txviz.explain.step import check_step
from txviz.models import LoadedModel
from txviz.seq2seq.decoding import Seq2SeqTrace, banned_ids, decoder_start_id, encode_source


@dataclass(frozen=True, eq=False)
class SourceAttribution:
    """One decoding step's attribution (S,) to the source tokens and its cross-attention (S,)."""

    step: int
    source_tokens: tuple[str, ...]
    attribution: np.ndarray  # signed, per source token
    cross_attention: np.ndarray  # the step's row, mean over the heads of the last decoder layer
    method: str
    target: str


def attribute_source(
    loaded: LoadedModel,
    source: str,
    trace: Seq2SeqTrace,
    step: int,
    method: str = "gradient",
    steps: int = IG_STEPS,
) -> SourceAttribution:
    """Attribution of log p(the token chosen at ``step``) to each source token; the decoder reads the
    target tokens of ``trace`` before the step, as it did when decoding."""
    require_kind(loaded, ("encoder-decoder",), "attribute a decoded token to the source")
    check_step(len(trace.steps), step)
    model = loaded.model
    source_ids, _ = encode_source(loaded, source)  # (1, S)
    prefix = [decoder_start_id(loaded)] + [s.token_id for s in trace.steps[:step]]
    target = Target(trace.steps[step].token_id)
    check_target(target, model.get_input_embeddings().num_embeddings)
    banned = banned_ids(loaded)
    decoder_ids = torch.tensor([prefix], device=loaded.device)

    def forward(embeds: torch.Tensor) -> torch.Tensor:
        batch = embeds.shape[0]
        logits = run(
            model, outputs=("logits",), grad=True, inputs_embeds=embeds,
            decoder_input_ids=decoder_ids.expand(batch, -1), use_cache=False,
        ).logits[:, -1].float()  # fmt: skip
        # decoding never chooses these: the probability explained is the one the page shows
        return target(
            logits.index_fill(-1, torch.tensor(banned, dtype=torch.long, device=logits.device), float("-inf"))
        )

    with torch.no_grad():
        # the encoder's own table (BART's scales its rows), by transformers' getter, not its attribute name
        embeds = run_module(model.get_encoder().get_input_embeddings(), source_ids).detach()
    special = np.asarray(special_flags(loaded.tokenizer, source_ids[0].tolist()), dtype=bool)
    reference = reference_embeddings(embeds, special)  # <s> and </s> stay as they are
    scores = attribute_embeddings(forward, embeds, method, reference, steps)
    cross = trace.cross.weights[-1, :, step].mean(axis=0)
    return SourceAttribution(
        step, trace.source_tokens, scores, cross.astype(np.float32), method,
        f"log p({trace.steps[step].token!r}) at step {step}",
    )  # fmt: skip
