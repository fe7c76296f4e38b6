"""Generation one token at a time, keeping what the model attended to and what it considered."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from txviz.core.attention import entropy as shannon_entropy
from txviz.core.candidates import Candidates, top_candidates
from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError, require_kind
from txviz.core.running import step as run_step
from txviz.core.tokens import readable_token, readable_tokens
from txviz.generation.sampling import SamplingSettings, choose, make_generator
from txviz.models import LoadedModel

MAX_NEW_TOKENS = 512  # newest rows of 30 x 9 heads stay near 80 MB of float16 at this length
TOP_CANDIDATES = 10
ROW_DTYPE = np.float16  # attention rows are kept for every step: half the memory of float32


class GenerationError(UserError):
    """Generation cannot run as asked; the message is meant for the user."""


@dataclass(frozen=True)
class GenerationRequest:
    """Everything a run of generation depends on; equal requests give equal runs (with a seed)."""

    prompt: str
    max_new_tokens: int = 32
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    chat: bool = False  # wrap the prompt in the model's chat template as one user turn
    record_attention: bool = True
    stop_at_eos: bool = True
    top_candidates: int = TOP_CANDIDATES
    interventions: tuple = ()  # txviz.core.edits applied at every step (e.g. steering)


@dataclass(frozen=True, eq=False)
class Prompt:
    """The prompt as the model reads it."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]  # readable, one per id
    raw_tokens: tuple[str, ...]  # the tokenizer's own pieces (Ġ, ▁) for hover
    text: str  # what the model reads, chat template included

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, eq=False)
class GenerationStep:
    """One new token: what was chosen, from what, with which attention, at what cost."""

    index: int  # 0 for the first new token
    position: int  # the new token's position in the whole sequence (prompt + generated)
    token_id: int
    token: str  # readable text of the token alone
    text: str  # the generated text so far, decoded as a whole (bytes joined properly)
    candidates: Candidates  # most likely by the model, chosen one included; a stage per filter
    attention: np.ndarray | None  # [layer, head, key_pos] row of the query at position - 1
    kv_tokens: tuple[int, ...]  # tokens held in the KV cache, per layer, after this step
    kv_bytes: tuple[int, ...]  # bytes of keys and values, per layer, after this step
    elapsed_s: float  # since generation started, prompt included
    finished: bool = False  # the model emitted an end-of-sequence token
    entropy: float = float("nan")  # nats, of the model's own distribution over the whole vocabulary

    @property
    def query_position(self) -> int:
        """Position of the token whose attention row chose this token (the newest one fed in)."""
        return self.position - 1

    @property
    def tokens_per_second(self) -> float:
        return (self.index + 1) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def chosen_rank(self) -> int:
        """Index of the chosen token among the candidates."""
        return self.candidates.ids.index(self.token_id)


def check_model(loaded: LoadedModel) -> None:
    """Raise WrongModelKind or GenerationError unless the model can generate text token by token."""
    require_kind(loaded, ("decoder",), "generate text one token at a time")
    if loaded.tokenizer is None:
        raise GenerationError(f"{loaded.name} has no tokenizer, so it cannot read a prompt.")


def has_chat_template(loaded: LoadedModel) -> bool:
    """True when the tokenizer carries a chat template (instruct models)."""
    return bool(getattr(loaded.tokenizer, "chat_template", None))


def prepare(loaded: LoadedModel, request: GenerationRequest) -> Prompt:
    """Check the request against the model and tokenise the prompt; errors speak to the user."""
    check_model(loaded)
    if not request.prompt or not request.prompt.strip():
        raise GenerationError("The prompt is empty: type a few words for the model to continue.")
    if request.max_new_tokens < 1:
        raise GenerationError("Max new tokens must be at least 1.")
    if request.max_new_tokens > MAX_NEW_TOKENS:
        raise GenerationError(
            f"Max new tokens is at most {MAX_NEW_TOKENS} here: every step keeps a row of "
            "attention for every layer and head."
        )
    try:
        request.sampling.validate()
    except UserError as error:
        raise GenerationError(str(error)) from error
    tokenizer = loaded.tokenizer
    if request.chat:
        if not has_chat_template(loaded):
            raise GenerationError(f"{loaded.name} has no chat template: turn the chat template off.")
        messages = [{"role": "user", "content": request.prompt}]
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    else:
        text = request.prompt
        ids = tokenizer(text)["input_ids"]
    n_ctx = loaded.n_ctx
    if len(ids) >= n_ctx:
        raise GenerationError(
            f"The prompt has {len(ids):,} tokens, but {loaded.name} reads at most {n_ctx:,}: shorten it."
        )
    if len(ids) + request.max_new_tokens > n_ctx:
        raise GenerationError(
            f"The prompt has {len(ids):,} tokens; with {request.max_new_tokens:,} new ones that "
            f"passes {loaded.name}'s context of {n_ctx:,}. Ask for at most "
            f"{n_ctx - len(ids):,} new tokens."
        )
    tokens, raw = readable_tokens(tokenizer, list(ids))
    return Prompt(tuple(int(i) for i in ids), tokens, raw, text)


def eos_ids(loaded: LoadedModel) -> frozenset[int]:
    """Tokens that end a generation, as model.generate reads them."""
    eos = getattr(loaded.model.generation_config, "eos_token_id", None)
    if eos is None:
        eos = loaded.tokenizer.eos_token_id
    if eos is None:
        return frozenset()
    return frozenset([eos] if isinstance(eos, int) else eos)


def kv_cache_size(cache) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(tokens, bytes) held per layer by a transformers cache."""
    tokens, sizes = [], []
    for layer in getattr(cache, "layers", []):
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if keys is None or keys.numel() == 0:
            tokens.append(0)
            sizes.append(0)
            continue
        tokens.append(int(keys.shape[-2]))  # (B, H_kv, T, D)
        sizes.append(keys.numel() * keys.element_size() + values.numel() * values.element_size())
    return tuple(tokens), tuple(sizes)


def stop_ids(loaded: LoadedModel, request: GenerationRequest) -> frozenset[int]:
    """Tokens that end this request's generation (none when it asks not to stop)."""
    return eos_ids(loaded) if request.stop_at_eos else frozenset()


def prefill(loaded: LoadedModel, prompt: Prompt, interventions: tuple = ()):
    """A KV cache holding all but the prompt's last token; the first step feeds that one."""
    from transformers import DynamicCache  # heavy import, only when generating

    model = loaded.model
    cache = DynamicCache(config=model.config)
    if len(prompt) > 1:
        # Through the fast path: a recorded prompt would build every head's full [T, T] scores
        # only to keep the last row.
        ids = torch.tensor([prompt.ids[:-1]], device=loaded.device)  # (1, T - 1)
        settings = CaptureSettings(interventions=interventions)
        run_step(model, settings, ("last_logits", "output"), input_ids=ids, past_key_values=cache)
    return cache


def prefill_batch(loaded: LoadedModel, prompts: list[Prompt]):
    """(cache, valid): prompts prefilled together, left-padded; valid (B, T) marks real tokens."""
    if len(prompts) == 1:
        return prefill(loaded, prompts[0]), torch.ones(1, len(prompts[0]) - 1, dtype=torch.bool)
    from transformers import DynamicCache

    model = loaded.model
    cache = DynamicCache(config=model.config)
    bodies = [p.ids[:-1] for p in prompts]  # the last token of each is fed by the first step
    width = max(len(b) for b in bodies)
    valid = torch.tensor([[False] * (width - len(b)) + [True] * len(b) for b in bodies], dtype=torch.bool)
    if width == 0:
        return cache, valid
    ids = torch.tensor([[0] * (width - len(b)) + list(b) for b in bodies], device=loaded.device)
    # Each row counts its positions from its first real token, as it would alone.
    positions = (valid.long().cumsum(-1) - 1).clamp(min=0)
    run_step(
        model,
        CaptureSettings(),
        ("last_logits", "output"),
        input_ids=ids,
        attention_mask=valid.to(device=loaded.device, dtype=torch.long),
        position_ids=positions.to(loaded.device),
        past_key_values=cache,
    )
    return cache, valid


def make_step(
    loaded: LoadedModel,
    request: GenerationRequest,
    prompt: Prompt,
    generated: list[int],
    choice,
    attention: np.ndarray | None,
    kv: tuple[tuple[int, ...], tuple[int, ...]],
    elapsed_s: float,
    finished: bool,
) -> GenerationStep:
    """The record of one new token (the last of `generated`), as both decode loops report it."""
    tokenizer, token_id = loaded.tokenizer, choice.token_id
    return GenerationStep(
        index=len(generated) - 1,
        position=len(prompt) + len(generated) - 1,
        token_id=token_id,
        token=readable_token(tokenizer, tokenizer.convert_ids_to_tokens(token_id)),
        text=tokenizer.decode(generated, skip_special_tokens=False),
        candidates=top_candidates(tokenizer, choice.shown, request.top_candidates, token_id),
        attention=attention,
        kv_tokens=kv[0],
        kv_bytes=kv[1],
        elapsed_s=elapsed_s,
        finished=finished,
        # The whole distribution is at hand only here; the candidates keep its top few.
        entropy=float(shannon_entropy(choice.before)),
    )


def generate(
    loaded: LoadedModel, request: GenerationRequest, prompt: Prompt | None = None
) -> Iterator[GenerationStep]:
    """Yield one GenerationStep per new token; stop iterating to stop generating."""
    prompt = prompt or prepare(loaded, request)
    model = loaded.model
    generator = make_generator(request.sampling.seed)
    stops = stop_ids(loaded, request)
    settings = CaptureSettings(
        record=frozenset({"weights"} if request.record_attention else ()),
        newest_query_only=True,
        interventions=request.interventions,
    )
    generated: list[int] = []
    start = time.perf_counter()
    cache = prefill(loaded, prompt, request.interventions)
    next_input = torch.tensor([prompt.ids[-1:]], device=loaded.device)  # (1, 1)
    for _ in range(request.max_new_tokens):
        # The capture block and no_grad close before each yield: the caller's code between
        # steps must not run inside them.
        step = run_step(model, settings, input_ids=next_input, past_key_values=cache)
        choice = choose(step.logits[0, -1], request.sampling, generator)
        attention = None
        if request.record_attention:
            n_keys = len(prompt) + len(generated)  # sliding-window layers keep fewer: zeros before them
            attention = step.stack("weights", keys=n_keys)[:, :, -1, :].astype(ROW_DTYPE)  # (L, H, K)
        generated.append(choice.token_id)
        finished = choice.token_id in stops
        elapsed = time.perf_counter() - start
        yield make_step(
            loaded, request, prompt, generated, choice, attention, kv_cache_size(cache), elapsed, finished
        )
        if finished:
            return
        next_input = torch.tensor([[choice.token_id]], device=loaded.device)


def sequence_attention(steps: list[GenerationStep], layer: int, head: int) -> np.ndarray:
    """One head's causal attention over the generation: float32 [step, key_pos], 0 past each row."""
    rows = [s.attention[layer, head] for s in steps if s.attention is not None]
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    out = np.zeros((len(rows), len(rows[-1])), dtype=np.float32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def attention_bytes(n_layers: int, n_heads: int, n_prompt: int, n_new: int) -> tuple[int, int]:
    """(bytes of the newest step's rows, bytes of every step's rows) held for a run."""
    itemsize = np.dtype(ROW_DTYPE).itemsize
    newest = n_layers * n_heads * (n_prompt + n_new - 1) * itemsize
    keys_total = sum(n_prompt + i for i in range(n_new))  # step i's row covers prompt + i keys
    return newest, n_layers * n_heads * keys_total * itemsize


def sequence_tokens(prompt: Prompt, steps: list[GenerationStep]) -> tuple[str, ...]:
    """Readable token at every position: the prompt's, then each new one's."""
    return prompt.tokens + tuple(s.token for s in steps)
