"""Continuous batching: one decode loop per model serves every session's generation at once.

Decoding a small model on a CPU is memory-bound: one step reads every weight once whatever the
batch size, so eight sequences decoded together cost far less than eight decoded in turn. The
engine keeps one batched KV cache, left-padded so every row's newest token lines up on the right.
Sequences join between steps (those arriving together are prefilled in one left-padded batch, then
their cache rows are padded in) and leave when they end or their session goes away. Each sequence
keeps its own sampling settings, its own seeded generator and its own attention rows, with the
padding columns cut off again.

transformers' own continuous batching switches the model to a paged attention implementation,
which would bypass txviz's capture function and change the shared model for every session; this
scheduler keeps the model as loaded and records through the same capture as the lone loop.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from txviz.core.capture import CaptureSettings
from txviz.core.running import Run, step
from txviz.generation.loop import (
    ROW_DTYPE,
    GenerationError,
    GenerationRequest,
    GenerationStep,
    Prompt,
    make_step,
    prefill_batch,
    prepare,
    stop_ids,
)
from txviz.generation.sampling import Choice, choose, choose_greedy, make_generator
from txviz.models import LoadedModel

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 8  # rows decoded together; later requests wait their turn in order
POLL_S = 0.25  # how often a waiting consumer hears its place in the queue
# An idle engine waits this long for company before its first prefill: a class pressing "Generate"
# together then shares one prefill and starts on the same step instead of in a staggered line.
GATHER_S = 0.02
_TORCH_ROW_DTYPE = torch.from_numpy(np.empty(0, dtype=ROW_DTYPE)).dtype


@dataclass(frozen=True)
class Waiting:
    """The request is queued: this many requests are ahead of it."""

    ahead: int


@dataclass(eq=False)
class _Sequence:
    """One session's generation inside the engine."""

    request: GenerationRequest
    prompt: Prompt
    owner: str
    number: int  # arrival order: the queue is first come, first served
    out: queue.Queue = field(default_factory=queue.Queue)  # _RawStep | Exception | None (the end)
    cancelled: threading.Event = field(default_factory=threading.Event)
    generated: list[int] = field(default_factory=list)
    generator: torch.Generator | None = None
    stops: frozenset[int] = frozenset()
    next_input: int = 0
    length: int = 0  # tokens of this sequence held in the cache
    start: float = 0.0


class Ticket:
    """A session's handle on its queued or running generation."""

    def __init__(self, engine: GenerationEngine, sequence: _Sequence):
        self._engine, self._sequence = engine, sequence

    def cancel(self) -> None:
        """Stop generating for this ticket; its row leaves the batch before the next step."""
        self._sequence.cancelled.set()
        self._engine._wake()

    def events(self) -> Iterator[Waiting | GenerationStep]:
        """Waiting(ahead) while queued, then one GenerationStep per new token; cancels when closed."""
        sequence, told = self._sequence, None
        try:
            while True:
                ahead = self._engine.ahead_of(sequence)
                if ahead is not None and ahead != told:
                    told = ahead
                    yield Waiting(ahead)
                try:
                    item = sequence.out.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                if item is None:
                    return
                if isinstance(item, Exception):
                    raise item
                yield item.finish(self._engine.loaded, sequence)
        finally:
            self.cancel()  # a closed tab or a new run stops the generator: free the row

    def steps(self) -> Iterator[GenerationStep]:
        """Only the generated steps (waits silently while queued)."""
        return (event for event in self.events() if isinstance(event, GenerationStep))


class GenerationEngine:
    """One decode loop for one loaded model, shared by every session that generates with it."""

    def __init__(self, loaded: LoadedModel, max_batch: int = DEFAULT_MAX_BATCH):
        # Weak: the model cache owns the model; an engine (and its idle thread) must not keep an
        # evicted model's weights alive. A session generating holds the model itself meanwhile.
        self._loaded = weakref.ref(loaded)
        self.max_batch = max(1, int(max_batch))
        self._changed = threading.Condition()
        self._waiting: list[_Sequence] = []
        self._active: list[_Sequence] = []
        self._cache = None  # the batched DynamicCache, rows in self._active order
        self._valid: torch.Tensor | None = None  # bool (B, T): which cache columns hold a real token
        self._numbers = itertools.count()
        self._thread: threading.Thread | None = None
        self._closing = False
        self.steps_run = 0  # batched forwards so far (tests and the benchmark read it)
        self.prefills_run = 0  # prefill forwards so far: sequences arriving together share one
        self.largest_batch = 0

    @property
    def loaded(self) -> LoadedModel:
        loaded = self._loaded()
        if loaded is None:
            raise GenerationError("The model was unloaded to make room for others: run it again.")
        return loaded

    def _name(self) -> str:
        """The model's name for a log line, without raising once it is unloaded."""
        loaded = self._loaded()
        return "an unloaded model" if loaded is None else loaded.name

    # -- sessions' side ------------------------------------------------------------------------
    def submit(self, request: GenerationRequest, owner: str = "") -> Ticket:
        """Queue a generation; a session's earlier one is cancelled (one heavy job per session)."""
        prompt = prepare(self.loaded, request)  # errors speak to the user before anything queues
        if request.interventions:  # rows of one batch share the model's forward: generate such runs alone
            raise ValueError("The shared engine runs no interventions: use generation.loop.generate.")
        sequence = _Sequence(request, prompt, owner, next(self._numbers))
        with self._changed:
            if owner:
                for other in self._waiting + self._active:
                    if other.owner == owner:
                        other.cancelled.set()
            self._waiting.append(sequence)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="txviz-generation", daemon=True)
                self._thread.start()
            self._changed.notify_all()
        return Ticket(self, sequence)

    def ahead_of(self, sequence: _Sequence) -> int | None:
        """How many requests are ahead of a queued one; None once it is running or done."""
        with self._changed:
            live = [s for s in self._waiting if not s.cancelled.is_set()]
            if sequence not in live:
                return None
            return live.index(sequence)

    def load(self) -> tuple[int, int]:
        """(running, waiting) right now."""
        with self._changed:
            return len(self._active), len(self._waiting)

    def close(self) -> None:
        """Cancel everything and stop the loop (tests; a server just lets its daemon thread idle)."""
        with self._changed:
            for sequence in self._waiting + self._active:
                sequence.cancelled.set()
            self._closing = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=30)

    def _wake(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # -- the decode loop -----------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as error:  # never leave a session waiting on a dead loop
            with self._changed:
                for sequence in self._waiting + self._active:
                    sequence.out.put(error if isinstance(error, Exception) else RuntimeError(str(error)))
                self._waiting, self._active, self._cache, self._valid = [], [], None, None
                self._thread = None
            raise

    def _loop(self) -> None:
        while True:
            with self._changed:
                self._drop_finished()
                while not self._active and not self._waiting:
                    if self._closing or not self._changed.wait(timeout=30):
                        self._thread = None  # idle: the next submit starts a new thread
                        return
                    self._drop_finished()
                if not self._active and len(self._waiting) < self.max_batch:
                    self._changed.wait(timeout=GATHER_S)
                joining = []
                while self._waiting and len(self._active) + len(joining) < self.max_batch:
                    joining.append(self._waiting.pop(0))
            self._join([s for s in joining if not _finished_early(s)])
            if self._active:
                try:
                    self._step()
                except Exception as error:  # one bad step must not hang every session
                    # The model unloaded meanwhile is news for the sessions alone; anything else is a bug.
                    level = logging.INFO if isinstance(error, GenerationError) else logging.ERROR
                    log.log(level, "a decode step on %s failed", self._name(), exc_info=True)
                    for sequence in self._active:
                        sequence.out.put(error)
                        sequence.cancelled.set()

    def _join(self, sequences: list[_Sequence]) -> None:
        """Prefill new sequences in one left-padded batch, then pad their cache rows into the batch."""
        if not sequences:
            return
        try:
            for sequence in sequences:
                sequence.start = time.perf_counter()
                sequence.generator = make_generator(sequence.request.sampling.seed)
                sequence.stops = stop_ids(self.loaded, sequence.request)
                sequence.length = len(sequence.prompt) - 1
                sequence.next_input = sequence.prompt.ids[-1]
            own, own_valid = prefill_batch(self.loaded, [s.prompt for s in sequences])
            self.prefills_run += 1
            with self._changed:
                self._cache, self._valid = _merge(self._cache, self._valid, own, own_valid)
                self._active.extend(sequences)
                self.largest_batch = max(self.largest_batch, len(self._active))
        except Exception as error:  # these sessions hear why; the others go on
            # Prompts were checked in submit: what fails here is the server's, but for an unloaded model.
            level = logging.INFO if isinstance(error, GenerationError) else logging.ERROR
            log.log(
                level, "prefilling %d sequences on %s failed", len(sequences), self._name(), exc_info=True
            )
            for sequence in sequences:
                sequence.out.put(error)

    def _drop_finished(self) -> None:
        """Rows whose sequence ended or was cancelled leave the batch (called under the lock)."""
        keep = [i for i, s in enumerate(self._active) if not s.cancelled.is_set()]
        for i, sequence in enumerate(self._active):
            if i not in keep:
                sequence.out.put(None)
        if len(keep) == len(self._active):
            return
        self._active = [self._active[i] for i in keep]
        if not keep:
            self._cache, self._valid = None, None
            return
        index = torch.tensor(keep)
        for layer in self._cache.layers:
            if _kv(layer) is not None:
                layer.keys, layer.values = layer.keys[index], layer.values[index]
        self._valid = self._valid[index]
        _trim_padding(self._cache, self)

    def _step(self) -> None:
        """One batched forward: every active row gets its next token."""
        loaded, rows = self.loaded, list(self._active)
        model, device = loaded.model, loaded.device
        input_ids = torch.tensor([[s.next_input] for s in rows], device=device)  # (B, 1)
        record = any(s.request.record_attention for s in rows)
        settings = CaptureSettings(record=frozenset({"weights"} if record else ()), newest_query_only=True)
        valid = torch.cat([self._valid, torch.ones(len(rows), 1, dtype=torch.bool)], dim=1)  # (B, T + 1)
        positions = torch.tensor([[s.length] for s in rows], device=device)  # (B, 1): true positions
        output = step(
            model,
            settings,
            input_ids=input_ids,
            attention_mask=valid.to(device=device, dtype=torch.long),
            position_ids=positions,
            past_key_values=self._cache,
        )
        self._valid = valid
        self.steps_run += 1
        stacked = _stacked_rows(output) if record else None
        first_keys = _first_keys(valid) if record else None
        kv_per_token = _kv_bytes_per_token(self._cache)
        # Greedy rows are chosen together: one softmax and one argmax over their (G, V) logits.
        greedy = [b for b, s in enumerate(rows) if s.request.sampling.greedy]
        chosen = dict(zip(greedy, choose_greedy(output.logits[greedy, -1]), strict=True)) if greedy else {}
        for b, sequence in enumerate(rows):
            attention = None
            if sequence.request.record_attention:
                attention = _Rows(stacked, b, valid[b], None if first_keys is None else first_keys[b])
            choice = chosen.get(b)
            if choice is None:
                choice = choose(output.logits[b, -1], sequence.request.sampling, sequence.generator)
            self._emit(sequence, choice, attention, kv_per_token)

    def _emit(
        self,
        sequence: _Sequence,
        choice: Choice,
        attention: _Rows | None,
        kv_per_token: tuple[int, ...],
    ) -> None:
        """Hand one row's chosen token, chosen with its own settings, to its session as a raw step."""
        request = sequence.request
        sequence.length += 1
        sequence.generated.append(choice.token_id)
        finished = choice.token_id in sequence.stops
        sequence.out.put(
            _RawStep(
                tuple(sequence.generated),
                choice,
                attention,
                _row_kv(kv_per_token, sequence.length),
                time.perf_counter() - sequence.start,
                finished,
            )
        )
        sequence.next_input = choice.token_id
        if finished or len(sequence.generated) >= request.max_new_tokens:
            sequence.cancelled.set()  # done: the row leaves before the next step


@dataclass(frozen=True)
class _Rows:
    """One row's newest attention inside a step's stacked rows, cut out when its session reads it."""

    stacked: torch.Tensor  # (B, L, H, K) for the whole batch
    row: int
    valid: torch.Tensor  # (K,) bool: this row's real keys
    first: int | None = None  # the first real key when every key from it on is real (the usual case)

    def array(self) -> np.ndarray:
        if self.first is None:
            return self.stacked[self.row][:, :, self.valid].numpy().astype(ROW_DTYPE)
        # A slice, not a mask: one copy, converted by torch (rounds to nearest even, as numpy does).
        return self.stacked[self.row, :, :, self.first :].to(_TORCH_ROW_DTYPE).numpy()


@dataclass(frozen=True)
class _RawStep:
    """What the decode loop hands a session; the session's own thread writes the GenerationStep.

    Text decoding, candidates and attention rows are per-session work: done in the reader's thread
    they overlap the engine's next batched forward instead of delaying every row.
    """

    generated: tuple[int, ...]
    choice: Choice
    attention: _Rows | None
    kv: tuple[tuple[int, ...], tuple[int, ...]]
    elapsed_s: float
    finished: bool

    def finish(self, loaded: LoadedModel, sequence: _Sequence) -> GenerationStep:
        attention = self.attention.array() if self.attention is not None else None
        return make_step(
            loaded,
            sequence.request,
            sequence.prompt,
            list(self.generated),
            self.choice,
            attention,
            kv=self.kv,
            elapsed_s=self.elapsed_s,
            finished=self.finished,
        )


def _pad_left(tensor: torch.Tensor, length: int) -> torch.Tensor:
    """Zero columns on the left of dim -2 up to length (they are masked, so zeros never count)."""
    missing = length - tensor.shape[-2]
    if missing <= 0:
        return tensor
    shape = (*tensor.shape[:-2], missing, tensor.shape[-1])
    return torch.cat([tensor.new_zeros(shape), tensor], dim=-2)


def _kv(layer) -> tuple[torch.Tensor, torch.Tensor] | None:
    """A cache layer's keys and values, or None while it holds no token (a one-token prompt)."""
    keys = getattr(layer, "keys", None)
    return None if keys is None or keys.numel() == 0 else (keys, layer.values)


def _merge(batch, valid: torch.Tensor | None, own, own_valid: torch.Tensor):
    """The batched cache with own's rows (real tokens where own_valid) padded in on the left."""
    if batch is None:
        return own, own_valid
    width = max(valid.shape[1], own_valid.shape[1])
    rows = valid.shape[0]
    for mine, theirs in zip(batch.layers, own.layers, strict=True):
        a, b = _kv(mine), _kv(theirs)
        if a is None and b is None:
            continue  # no row holds a token yet: the next forward fills every row
        like = (a or b)[0]
        empty = like.new_zeros((1, like.shape[1], 0, like.shape[3]))
        a = a or (empty.expand(rows, -1, -1, -1), empty.expand(rows, -1, -1, -1))
        b = b or (empty.expand(len(own_valid), -1, -1, -1), empty.expand(len(own_valid), -1, -1, -1))
        mine.keys = torch.cat([_pad_left(a[0], width), _pad_left(b[0], width)], dim=0)
        mine.values = torch.cat([_pad_left(a[1], width), _pad_left(b[1], width)], dim=0)
        mine.is_initialized = True
        mine.dtype, mine.device = like.dtype, like.device
    return batch, torch.cat([_pad_mask_left(valid, width), _pad_mask_left(own_valid, width)], dim=0)


def _pad_mask_left(valid: torch.Tensor, width: int) -> torch.Tensor:
    """A validity mask widened to `width` columns with invalid ones on the left."""
    return torch.cat([torch.zeros(len(valid), width - valid.shape[1], dtype=torch.bool), valid], dim=1)


def _finished_early(sequence: _Sequence) -> bool:
    """A sequence cancelled while it waited ends here, before its prefill."""
    if sequence.cancelled.is_set():
        sequence.out.put(None)
        return True
    return False


def _trim_padding(cache, engine: GenerationEngine) -> None:
    """Drop leading columns no row uses any more (the longest sequence left the batch)."""
    used = engine._valid.any(dim=0).nonzero()
    first = int(used[0]) if len(used) else engine._valid.shape[1]
    if first == 0:
        return
    for layer in cache.layers:
        if _kv(layer) is not None:
            layer.keys, layer.values = layer.keys[..., first:, :], layer.values[..., first:, :]
    engine._valid = engine._valid[:, first:]


def _kv_bytes_per_token(cache) -> tuple[int, ...]:
    """Bytes of keys and values one token takes, per layer (once a step, not once a row)."""
    return tuple(2 * layer.keys[0, :, 0, :].numel() * layer.keys.element_size() for layer in cache.layers)


def _row_kv(per_token: tuple[int, ...], length: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(tokens, bytes) one row holds per layer: its own tokens, not the batch's padding."""
    return (length,) * len(per_token), tuple(length * size for size in per_token)


def _first_keys(valid: torch.Tensor) -> list[int | None]:
    """Per row of valid (B, K), its first real key when the real keys run from there to the end.

    Rows are left-padded, so that is every row; None sends a row back to reading through its mask."""
    count = valid.sum(dim=1)
    first = valid.shape[1] - count
    arange = torch.arange(valid.shape[1])
    suffix = (valid == (arange.unsqueeze(0) >= first.unsqueeze(1))).all(dim=1)
    return [int(f) if ok else None for f, ok in zip(first.tolist(), suffix.tolist(), strict=True)]


def _stacked_rows(recorder: Run) -> torch.Tensor:
    """Every row's newest attention (B, L, H, K), padding columns still in."""
    per_layer = [recorder.attention[n][-1].weights[:, :, -1, :] for n in recorder.names()]  # (B, H, K)
    return torch.stack(per_layer, dim=1)
