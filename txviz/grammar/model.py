"""The tiny encoder-decoder of the grammar's four tasks, with attention written out so each head's
queries, keys and weights can be read (and checked by hand).

Pre-norm blocks without dropout: the encoder's self-attention and FFN; the decoder's causal
self-attention, cross-attention over the encoder's output, and FFN. One vocabulary, one embedding
table for source and target, learnt positions. No transformers model: the network is the project's own.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import load_model, save_model
from torch import nn

from txviz.core import paths
from txviz.grammar import language as lang

ASSETS_DIR = paths.ASSETS / "grammar"


@dataclass(frozen=True)
class GrammarConfig:
    """Everything that decides a run: the seed fixes the split, the initial weights and every batch."""

    d_model: int = 64
    heads: int = 4
    encoder_layers: int = 2
    decoder_layers: int = 2
    steps: int = 2400
    batch_size: int = 64
    lr: float = 2e-3
    shares: tuple[int, ...] = (3, 3, 1, 1)  # examples of parse, tag, count, translate in each batch
    held_out: int = 400
    seed: int = lang.SEED


class Attention(nn.Module):
    """Multi-head attention with its projections in the open; ``records`` (a list) gets this call's
    input, memory, queries, keys and weights when given."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def split(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.shape[0], x.shape[1], self.heads, self.head_dim).transpose(1, 2)  # (B, H, T, Dh)

    def forward(self, x, memory, keep_keys: torch.Tensor, causal: bool = False, records: list | None = None):
        q, k, v = self.split(self.q(x)), self.split(self.k(memory)), self.split(self.v(memory))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        allowed = keep_keys[:, None, None, :]
        if causal:
            allowed = allowed & torch.ones(x.shape[1], memory.shape[1], dtype=torch.bool).tril()
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1)
        if records is not None:
            records.append({"input": x, "memory": memory, "queries": q, "keys": k, "weights": weights})
        out = (weights @ v).transpose(1, 2).reshape(x.shape)
        return self.o(out)


class Block(nn.Module):
    def __init__(self, d: int, heads: int, cross: bool):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(d), Attention(d, heads)
        self.norm2, self.cross = (nn.LayerNorm(d), Attention(d, heads)) if cross else (None, None)
        self.norm3 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x, keep, memory=None, memory_keep=None, records: dict | None = None):
        h = self.norm1(x)
        x = x + self.attn(h, h, keep, causal=self.cross is not None, records=_list(records, "self"))
        if self.cross is not None:
            x = x + self.cross(self.norm2(x), memory, memory_keep, records=_list(records, "cross"))
        return x + self.ffn(self.norm3(x))


def _list(records: dict | None, kind: str) -> list | None:
    return None if records is None else records.setdefault(kind, [])


class GrammarModel(nn.Module):
    def __init__(self, config: GrammarConfig = GrammarConfig()):
        super().__init__()
        d = config.d_model
        self.config = config
        self.token = nn.Embedding(len(lang.VOCABULARY), d)
        self.source_position = nn.Embedding(lang.MAX_SOURCE, d)
        self.target_position = nn.Embedding(lang.MAX_TARGET + 1, d)
        self.encoder = nn.ModuleList(Block(d, config.heads, False) for _ in range(config.encoder_layers))
        self.decoder = nn.ModuleList(Block(d, config.heads, True) for _ in range(config.decoder_layers))
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(d), nn.LayerNorm(d)

    def embed(self, ids: torch.Tensor, positions: nn.Embedding) -> torch.Tensor:
        return self.token(ids) * math.sqrt(self.token.embedding_dim) + positions(torch.arange(ids.shape[1]))

    def encode(self, source: torch.Tensor, records: dict | None = None) -> torch.Tensor:
        x, keep = self.embed(source, self.source_position), source != lang.PAD
        for block in self.encoder:
            x = block(x, keep, records=records)
        return self.encoder_norm(x)

    def decode(self, memory, source, inputs, records: dict | None = None) -> torch.Tensor:
        """Logits (B, T, V) of the next token at every decoder input position."""
        x = self.embed(inputs, self.target_position)
        keep = torch.ones(inputs.shape, dtype=torch.bool)
        for block in self.decoder:
            x = block(x, keep, memory, source != lang.PAD, records=records)
        return self.decoder_norm(x) @ self.token.weight.T  # tied output table

    def forward(self, source, inputs):
        return self.decode(self.encode(source), source, inputs)


def padded(rows: list[list[int]], length: int | None = None) -> torch.Tensor:
    length = length or max(len(r) for r in rows)
    return torch.tensor([r + [lang.PAD] * (length - len(r)) for r in rows])


def save(model: GrammarModel, runs: dict, directory: Path = ASSETS_DIR) -> None:
    """model.safetensors and runs.json (the config, the held-out numbers and their baselines)."""
    directory.mkdir(parents=True, exist_ok=True)
    save_model(model, str(directory / "model.safetensors"))
    (directory / "runs.json").write_text(
        json.dumps({"config": asdict(model.config), **runs}, indent=1) + "\n"
    )


def load(directory: Path = ASSETS_DIR) -> tuple[GrammarModel, dict]:
    """The shipped model and runs.json."""
    runs = json.loads((directory / "runs.json").read_text())
    model = GrammarModel(GrammarConfig(**runs["config"]))
    load_model(model, str(directory / "model.safetensors"))
    return model.eval(), runs
