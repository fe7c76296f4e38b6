"""Encoder-decoder decoding step by step, greedy or beam search, with every attention recorded.

The encoder reads the source once. The decoder starts from its start token and adds one token per
step. At each step the newest target token attends to the earlier target tokens (masked
self-attention) and to every source token (cross-attention). Because decoder self-attention is
causal, the row of step t in one forward pass over the final target equals what step t computed
when it ran, so the attention of every step comes from one pass, recorded through the capture
attention function (any Hugging Face encoder-decoder: BART, Marian/opus-mt, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers.modeling_outputs import BaseModelOutput

from txviz.core.candidates import Candidates, top_candidates
from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.running import Run, run
from txviz.core.tokens import readable_tokens, special_flags
from txviz.core.trace import AttentionTrace
from txviz.models import LoadedModel, ModelLoadError

MAX_SOURCE_TOKENS = 256  # a sentence or a paragraph; attention views stay readable below this
DEFAULT_MAX_NEW_TOKENS = 40
N_ALTERNATIVES = 5


@dataclass(frozen=True)
class DecodeStep:
    """One decoding step: which target token was the query, and what it chose."""

    index: int  # step t reads target token t (t = 0 is the start token) and chooses token t + 1
    token: str  # the chosen token, readable
    token_id: int
    probability: float  # p(chosen | source, target tokens 0..t), pad and start token excluded
    candidates: Candidates  # the most probable next tokens at this step (chosen marked, not added)
    beams: tuple[tuple[str, float], ...] = ()  # beam search: every kept hypothesis, log-prob


@dataclass(frozen=True, eq=False)
class Seq2SeqTrace:
    """A decoding run: the steps and the three kinds of attention, [layer, head, query, key]."""

    source_tokens: tuple[str, ...]
    target_tokens: tuple[str, ...]  # decoder inputs: start token, then the chosen tokens fed back
    output_text: str
    steps: tuple[DecodeStep, ...]  # one per target token: steps[t] chose target token t + 1
    encoder: AttentionTrace  # kind "self": source x source
    decoder: AttentionTrace  # kind "causal": target x target, zero above the diagonal
    cross: AttentionTrace  # kind "cross": target x source
    method: str  # "greedy" or "beam search (k beams)"
    finished: bool  # the end token was chosen before the step limit
    notice: str = ""  # e.g. the source was cut


def encode_source(loaded: LoadedModel, text: str, max_tokens: int = MAX_SOURCE_TOKENS):
    """Source ids (1, S) and a notice when the text had to be cut to fit."""
    require_kind(loaded, ("encoder-decoder",), "decode a source text into a new one")
    if not text or not text.strip():
        raise UserError("The source sentence is empty: type a sentence to translate.")
    limit = min(loaded.n_ctx, max_tokens)
    ids = loaded.tokenizer(text.strip(), truncation=False)["input_ids"]
    notice = ""
    if len(ids) > limit:
        ids = loaded.tokenizer(text.strip(), truncation=True, max_length=limit)["input_ids"]
        notice = f"The source has more than {limit} tokens; only the first {limit} are used."
    unknown = sum(i == loaded.tokenizer.unk_token_id for i in ids)
    if unknown:
        notice = (notice + " " if notice else "") + (
            f"{unknown} source token(s) are unknown to the model and read as {loaded.tokenizer.unk_token}."
        )
    return torch.tensor([ids], device=loaded.device), notice


def _start_and_end(loaded: LoadedModel) -> tuple[int, set[int]]:
    """The decoder start token and the set of end tokens, from the generation config."""
    gen = getattr(loaded.model, "generation_config", None)
    start = getattr(gen, "decoder_start_token_id", None)
    if start is None:
        start = loaded.config.decoder_start_token_id
    if start is None:
        start = loaded.tokenizer.pad_token_id
    end = getattr(gen, "eos_token_id", None)
    if end is None:
        end = loaded.config.eos_token_id
    ends = set(end) if isinstance(end, (list, tuple)) else {end}
    return int(start), {int(e) for e in ends if e is not None}


def decoder_start_id(loaded: LoadedModel) -> int:
    """The token the decoder starts from (target token 0 of every decoding)."""
    return _start_and_end(loaded)[0]


def banned_ids(loaded: LoadedModel) -> list[int]:
    """Tokens decoding never chooses (their probability is renormalised away)."""
    start, ends = _start_and_end(loaded)
    return _banned(loaded, start, ends)


def _banned(loaded: LoadedModel, start: int, ends: set[int]) -> list[int]:
    """Tokens never chosen: padding and the start token (Marian never generates pad)."""
    banned = {loaded.tokenizer.pad_token_id, start} - ends - {None}
    return sorted(int(b) for b in banned)


@torch.no_grad()
def _next_log_probs(model, encoder_out, source_mask, prefixes: torch.Tensor, banned) -> torch.Tensor:
    """Log-probabilities of the next token for each prefix (B, T) -> (B, V)."""
    batch = prefixes.shape[0]
    hidden = encoder_out.last_hidden_state.expand(batch, -1, -1)  # (B, S, D)
    out = run(
        model,
        outputs=("logits",),
        encoder_outputs=BaseModelOutput(last_hidden_state=hidden),
        attention_mask=source_mask.expand(batch, -1),
        decoder_input_ids=prefixes,
        use_cache=False,
    )
    logits = out.logits[:, -1, :].float()  # (B, V)
    logits[:, banned] = float("-inf")
    return torch.log_softmax(logits, dim=-1)


def greedy_ids(model, encoder_out, source_mask, start: int, ends: set[int], banned, limit: int):
    """Greedy decoding: the most probable token at each step, until an end token or the limit."""
    ids = [start]
    device = source_mask.device
    for _ in range(limit):
        log_probs = _next_log_probs(
            model, encoder_out, source_mask, torch.tensor([ids], device=device), banned
        )
        ids.append(int(log_probs[0].argmax()))
        if ids[-1] in ends:
            break
    return ids, ()


def _normalized(item: tuple[list[int], float]) -> float:
    """Summed log-probability over the number of generated tokens (length_penalty = 1)."""
    return item[1] / (len(item[0]) - 1)


def beam_ids(model, encoder_out, source_mask, start: int, ends: set[int], banned, limit: int, beams: int):
    """Beam search as transformers runs it: the `beams` best prefixes live on; the best wins.

    Each step looks at the 2 x beams best extensions; one ending in the end token is kept as
    finished only when it ranks among the first `beams`. The search stops when `beams` are
    finished and no live prefix scores better than the worst of them, or at the step limit.
    Scores are summed log-probabilities divided by length (transformers' length_penalty = 1).
    Returns the ids and, per step, the live hypotheses as (ids, summed log-prob).
    """
    device = source_mask.device
    alive: list[tuple[list[int], float]] = [([start], 0.0)]
    finished: list[tuple[list[int], float]] = []
    history = []
    for _ in range(limit):
        prefixes = torch.tensor([ids for ids, _ in alive], device=device)
        log_probs = _next_log_probs(model, encoder_out, source_mask, prefixes, banned)  # (B, V)
        total = log_probs + torch.tensor([s for _, s in alive], device=device)[:, None]
        top = torch.topk(total.flatten(), k=min(2 * beams, total.numel()))
        alive = []
        for rank, (score, flat) in enumerate(zip(top.values.tolist(), top.indices.tolist(), strict=True)):
            row, token = divmod(flat, total.shape[1])
            ids = prefixes[row].tolist() + [token]
            if token in ends:
                if rank < beams:
                    finished = sorted([*finished, (ids, score)], key=_normalized, reverse=True)[:beams]
            elif len(alive) < beams:
                alive.append((ids, score))
        history.append(tuple(alive))
        if not alive:
            break
        if len(finished) >= beams and _normalized(finished[-1]) >= max(map(_normalized, alive)):
            break
    best = max([*finished, *alive], key=_normalized)
    return best[0], tuple(history)


def places(rec: Run, stack: str, cross: bool, what: str, loaded: LoadedModel) -> list[str]:
    """The recorded places of ``stack``'s self- or cross-attention by layer, as the model map names them."""
    kind = "cross" if cross else "attn"
    names = [n for n in rec.names(stack, cross) if n.startswith(f"{stack}.") and n.endswith(f".{kind}")]
    if not names:
        raise ModelLoadError(
            f"No {what} was recorded for {loaded.name}: its attention does not run through transformers' "
            "attention interface, or the model map (txviz/core/model_map.py) has no record of its family."
        )
    return names


@torch.no_grad()
def decode(
    loaded: LoadedModel,
    source: str,
    method: str = "greedy",
    beams: int = 4,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
) -> Seq2SeqTrace:
    """Decode ``source`` step by step and record encoder, decoder and cross-attention."""
    require_kind(loaded, ("encoder-decoder",), "decode a source text into a new one")
    if method not in ("greedy", "beam"):
        raise UserError(f"Unknown decoding method {method!r}: choose 'greedy' or 'beam'.")
    if method == "beam" and not 1 <= beams <= 16:
        raise UserError("Beam search needs between 1 and 16 beams.")
    if not 1 <= max_new_tokens <= 512:
        raise UserError("The number of steps must be between 1 and 512.")
    model, tokenizer = loaded.model, loaded.tokenizer
    source_ids, notice = encode_source(loaded, source)  # (1, S)
    source_mask = torch.ones_like(source_ids)
    start, ends = _start_and_end(loaded)
    banned = _banned(loaded, start, ends)

    settings = CaptureSettings(record=frozenset({"weights"}))
    enc_rec = run(
        model, settings, ("output",), part="encoder", input_ids=source_ids, attention_mask=source_mask
    )
    encoder_out = enc_rec.output
    enc_names = places(enc_rec, "encoder", False, "encoder self-attention", loaded)

    # Decoding itself takes the fast path: nothing is recorded until the target is known.
    if method == "greedy":
        ids, history = greedy_ids(model, encoder_out, source_mask, start, ends, banned, max_new_tokens)
    else:
        ids, history = beam_ids(model, encoder_out, source_mask, start, ends, banned, max_new_tokens, beams)
    finished = ids[-1] in ends
    decoder_inputs = torch.tensor([ids[:-1]], device=source_ids.device)  # (1, T)

    out = run(
        model,
        settings,
        ("logits",),
        encoder_outputs=encoder_out,
        attention_mask=source_mask,
        decoder_input_ids=decoder_inputs,
        use_cache=False,
    )
    dec_rec = out
    self_names = places(dec_rec, "decoder", False, "decoder self-attention", loaded)
    cross_names = places(dec_rec, "decoder", True, "cross-attention", loaded)

    log_probs = torch.log_softmax(out.logits[0].float(), dim=-1)  # (T, V)
    log_probs[:, banned] = float("-inf")
    log_probs = torch.log_softmax(log_probs, dim=-1)
    src_tokens, src_raw = readable_tokens(tokenizer, source_ids[0].tolist())
    tgt_tokens, tgt_raw = readable_tokens(tokenizer, ids[:-1])
    chosen_tokens, _ = readable_tokens(tokenizer, ids[1:])
    steps = []
    for t, token_id in enumerate(ids[1:]):
        candidates = top_candidates(tokenizer, log_probs[t].exp(), N_ALTERNATIVES, token_id, add_chosen=False)
        beam_rows = ()
        if history:
            beam_rows = tuple(
                (tokenizer.decode(h_ids[1:], skip_special_tokens=True), score)
                for h_ids, score in history[min(t, len(history) - 1)]
            )
        steps.append(
            DecodeStep(
                index=t,
                token=chosen_tokens[t],
                token_id=token_id,
                probability=float(log_probs[t, token_id].exp()),
                candidates=candidates,
                beams=beam_rows,
            )
        )

    def trace(rec, names, kind, queries, keys, raw, special) -> AttentionTrace:
        return AttentionTrace(
            query_tokens=queries,
            key_tokens=keys,
            weights=rec.stack("weights", names=names).astype(np.float32),
            model_name=loaded.name,
            kind=kind,
            layer_names=tuple(names),
            special=special,
            raw_tokens=raw,
            notice=notice,
        )

    src_special = special_flags(tokenizer, source_ids[0].tolist())
    tgt_special = special_flags(tokenizer, ids[:-1])
    return Seq2SeqTrace(
        source_tokens=src_tokens,
        target_tokens=tgt_tokens,
        output_text=tokenizer.decode(ids[1:], skip_special_tokens=True),
        steps=tuple(steps),
        encoder=trace(enc_rec, enc_names, "self", src_tokens, src_tokens, src_raw, src_special),
        decoder=trace(dec_rec, self_names, "causal", tgt_tokens, tgt_tokens, tgt_raw, tgt_special),
        cross=trace(dec_rec, cross_names, "cross", tgt_tokens, src_tokens, (), src_special),
        method="greedy" if method == "greedy" else f"beam search ({beams} beams)",
        finished=finished,
        notice=notice,
    )
