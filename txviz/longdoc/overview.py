"""The whole-document overview: per-head summaries of every layer, and one chosen layer's attention
folded, query block by query block, into pooled maps, sentence maps and what each token receives.

Nothing here holds a layer's full maps. Every layer's summaries are row statistics from the fused
attention kernel (txviz.core.rowstats), which never writes a row out; only the chosen layer is
folded from explicit blocks of weights (txviz.core.capture.Reduction), one block of queries at a
time. So memory grows with one block and the fixed-size summaries, and time stays near a plain
forward's: another layer's maps cost another pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.capture import Block, CaptureSettings, Reduction
from txviz.core.errors import UserError, require_kind
from txviz.core.layouts import cached_layout
from txviz.core.rowstats import RowStatistics
from txviz.core.running import run
from txviz.core.tokens import readable_tokens
from txviz.core.tracing import TEXT_KINDS, encode
from txviz.longdoc.spans import Spans, spans
from txviz.models import LoadedModel

TILES = 256  # a pooled map is at most this many tiles a side: about what a screen shows
# Floats in one block of queries (64 MB): SmolLM2 at 4,096 tokens takes 448 queries a block. Fewer,
# larger blocks mean fewer operations, and on a busy machine each operation's start costs more than
# its arithmetic; peak memory is a few blocks, whatever the length.
BLOCK_FLOATS = 2**24
SINK_TOKENS = 4  # attention sinks sit on the first few tokens (Xiao et al. 2023)
LOCAL_WINDOW = 32  # "local" attention: keys within this many positions of the query
LENGTHS = (512, 1024, 2048, 4096, 8192)  # the longest inputs offered; capped by the model's context
SUMMARIES = ("sink", "distance", "entropy", "local")


def tile_size(n_tokens: int, tiles: int | None = None) -> int:
    """Tokens per tile side so a map of n_tokens fits in tiles x tiles (TILES unless given)."""
    return max(1, -(-n_tokens // (tiles or TILES)))


@dataclass(frozen=True)
class Fold:
    """Folds the chosen layer's query blocks into its maps (the Reduction's reduce function).

    Each block is read twice, never copied: one matrix product sums rows into tiles and sentences
    and columns into what each key receives; one max across rows then keys gives the pooled maxima.
    """

    n_tokens: int
    tile: int
    sentence_of: torch.Tensor  # long (T,)
    n_sentences: int
    key_sentences: torch.Tensor  # float (T, S): one-hot sentence of each key, for one product

    def start(self, heads: int) -> dict[str, torch.Tensor]:
        side = -(-self.n_tokens // self.tile)
        zeros = lambda *shape: torch.zeros(heads, *shape)  # noqa: E731
        return {
            "pooled_sum": zeros(side, side),
            "pooled_max": zeros(side, side),
            "received": zeros(self.n_tokens),
            "sentences": zeros(self.n_sentences, self.n_sentences),
        }

    def __call__(self, state, block: Block) -> dict[str, torch.Tensor]:
        # (H, C, K'), queries first..; the state lives on the CPU, whatever device the model is on
        w, first = block.weights[0].float().cpu(), block.first
        heads, rows, width = w.shape
        state = state or self.start(heads)
        t = self.tile
        # rows summed into tiles and sentences, and columns (one product reads the block once)
        of_row = self.sentence_of[first : first + rows]
        low = int(of_row[0])
        n_tiles, n_sent = -(-rows // t), int(of_row[-1]) - low + 1
        gather = torch.zeros(n_tiles + n_sent + 1, rows)
        gather[torch.arange(rows) // t, torch.arange(rows)] = 1.0
        gather[n_tiles + of_row - low, torch.arange(rows)] = 1.0
        gather[-1] = 1.0
        summed = gather @ w  # (H, tiles + sentences + 1, K')
        top = first // t
        state["pooled_sum"][:, top : top + n_tiles, : -(-width // t)] += self._columns(
            summed[:, :n_tiles], "sum"
        )
        by_rows = summed[:, n_tiles:-1].reshape(heads * n_sent, width)  # 2-D: no broadcast copy of the keys
        state["sentences"][:, low : low + n_sent] += (by_rows @ self.key_sentences[:width]).view(
            heads, n_sent, -1
        )
        state["received"][:, :width] += summed[:, -1]
        # tile maxima: rows first (a reduction across rows runs along the contiguous keys), then keys
        pad = n_tiles * t - rows
        padded = torch.nn.functional.pad(w, (0, 0, 0, pad)) if pad else w  # only a last, ragged block
        tile_rows = padded.view(heads, n_tiles, t, width).amax(2)  # (H, tiles, K')
        state["pooled_max"][:, top : top + n_tiles, : -(-width // t)] = self._columns(tile_rows, "amax")
        return state

    def _columns(self, x: torch.Tensor, how: str) -> torch.Tensor:
        """(..., K') -> (..., ceil(K'/t)) summed or maxed over key tiles, without copying x."""
        t, width = self.tile, x.shape[-1]
        whole = width // t * t
        out = getattr(x[..., :whole].unflatten(-1, (whole // t, t)), how)(-1)
        if whole < width:  # a ragged last tile
            out = torch.cat([out, getattr(x[..., whole:], how)(-1, keepdim=True)], dim=-1)
        return out


@dataclass(frozen=True, eq=False)
class Overview:
    """A document's attention, every layer and head, reduced to what a screen can show."""

    model_name: str
    tokens: tuple[str, ...]  # readable tokens
    offsets: tuple[tuple[int, int], ...]  # characters of each token in the text
    layer_names: tuple[str, ...]
    tile: int  # tokens per tile side of the pooled maps
    sink: np.ndarray  # [layer, head] mean over queries of the weight on the first SINK_TOKENS keys
    distance: np.ndarray  # [layer, head] mean over queries of the expected |query - key|
    entropy: np.ndarray  # [layer, head] mean over queries of the row's entropy (nats)
    local: np.ndarray  # [layer, head] mean over queries of the weight within LOCAL_WINDOW
    layer: int  # the layer whose maps follow
    pooled_mean: np.ndarray  # [head, tiles, tiles] mean weight in each tile
    pooled_max: np.ndarray  # [head, tiles, tiles] largest weight in each tile
    received: np.ndarray  # [head, T] mean weight a key gets from the queries that see it
    sentences: np.ndarray  # [head, S, S] mean over a sentence's queries of the weight on each sentence
    spans: Spans
    causal: bool
    notice: str = ""

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def n_layers(self) -> int:
        return self.sink.shape[0]

    @property
    def n_heads(self) -> int:
        return self.sink.shape[1]


def input_limit(loaded: LoadedModel, asked: int) -> int:
    """The longest input read: what the user asked, never past the model's context."""
    return min(asked, loaded.n_ctx)


def lengths(loaded: LoadedModel) -> list[int]:
    """The longest-input choices this model allows (its own context when that is shorter)."""
    return [n for n in LENGTHS if n <= loaded.n_ctx] or [loaded.n_ctx]


def model_inputs(loaded: LoadedModel, ids: list[int]) -> dict:
    """The input ids on the model's device."""
    return {"input_ids": torch.tensor([ids], device=loaded.device)}


def outputs(loaded: LoadedModel) -> tuple[str, ...]:
    """A decoder's last position's logits only: all of them would be 4,096 x 49,152 floats, 800 MB."""
    return ("last_logits",) if loaded.kind == "decoder" else ()


def block_rows(n_tokens: int, heads: int, tile: int, floats: int = BLOCK_FLOATS) -> int:
    """Queries per block: as many as fit in ``floats``, a whole number of tiles."""
    return tile * max(1, floats // (heads * n_tokens * tile))


def overview(
    loaded: LoadedModel, text: str, max_tokens: int = 4096, layer: int | None = None, chunk: int | None = None
) -> Overview:
    """Every layer's head summaries and ``layer``'s maps (the last unless given) in one pass."""
    require_kind(loaded, TEXT_KINDS, "read a long document")
    encoded = encode(loaded, text, input_limit(loaded, max_tokens))
    n = len(encoded.ids)
    layout = cached_layout(loaded.model)
    layer = loaded.n_layers - 1 if layer is None else layer
    if not 0 <= layer < loaded.n_layers:
        raise UserError(f"{loaded.name} has layers 0 to {loaded.n_layers - 1}; there is no layer {layer}.")
    mapped = layout.place(layout.last_stack, layer)
    found = spans(text, encoded.offsets)
    tile = tile_size(n)
    of_token = torch.from_numpy(found.of_token)
    fold = Fold(n, tile, of_token, found.n, torch.nn.functional.one_hot(of_token, found.n).float())
    # blocks start on tile edges
    block = tile * max(1, chunk // tile) if chunk else block_rows(n, loaded.n_heads, tile)
    settings = CaptureSettings(
        reduction=Reduction(fold, chunk=block, modules=frozenset({mapped})),
        row_stats=RowStatistics(SINK_TOKENS, LOCAL_WINDOW, chunk=block),
    )
    result = run(loaded.model, settings, outputs(loaded), **model_inputs(loaded, encoded.ids))
    names = tuple(result.names())
    stats = [result.attention[name][-1].row_stats for name in names]
    summary = lambda key: torch.stack([getattr(s, key)[0] for s in stats]).mean(-1).numpy()  # noqa: E731
    maps = result.attention[mapped][-1].reduced
    causal = result.attention[mapped][-1].is_causal
    side = -(-n // tile)
    cells = np.minimum(tile, n - tile * np.arange(side)).astype(np.float32)
    seen_by = (n - np.arange(n)) if causal else np.full(n, n)  # queries that can see each key
    sizes = found.sizes().astype(np.float32)
    return Overview(
        model_name=loaded.name,
        tokens=readable_tokens(loaded.tokenizer, encoded.ids)[0],
        offsets=tuple(encoded.offsets),
        layer_names=names,
        tile=tile,
        **{name: summary(name) for name in SUMMARIES},
        layer=layer,
        pooled_mean=maps["pooled_sum"].numpy() / (cells[:, None] * cells[None, :]),
        pooled_max=maps["pooled_max"].numpy(),
        received=(maps["received"].numpy() / seen_by).astype(np.float32),
        sentences=maps["sentences"].numpy() / sizes[:, None],
        spans=found,
        causal=causal,
        notice=encoded.notice,
    )
