"""A captioner after Xu et al. (2015): a CNN over 4 x 4 patches, an LSTM that attends to one region per word."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from txviz.captioning.canvas import END, GRID, MAX_STEPS, PATCH, START, VOCAB
from txviz.core.threads import torch_threads

METHODS = ("soft", "hard")


@dataclass(frozen=True)
class CaptionerConfig:
    """Sizes of the captioner; saved beside its weights."""

    attention: str = "soft"  # "soft": weighted mean of the patches; "hard": one sampled patch
    channels: int = 32
    hidden: int = 96
    word_dim: int = 24
    attention_dim: int = 48

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class Caption:
    """What a captioner wrote for a batch: words, attention per word, and where hard attention looked."""

    words: torch.Tensor  # (B, T) token ids; END ends a caption
    attention: torch.Tensor  # (B, T, 64) the weights read while writing each word (one-hot for hard)
    policy: torch.Tensor  # (B, T, 64) the attention distribution the weights came from (hard samples from it)
    chosen: torch.Tensor  # (B, T) the patch read (hard: sampled or arg-max; soft: arg-max, for reference)

    def lengths(self) -> torch.Tensor:
        """Words before the first END (T when none)."""
        ended = self.words == END
        first = torch.where(
            ended.any(1),
            ended.float().argmax(1),
            torch.full_like(ended[:, 0], ended.shape[1], dtype=torch.long),
        )
        return first.long()


ENCODER = ("patches", "convs", "position")  # the image encoder's parts; the hard captioner borrows them


class Captioner(nn.Module):
    """Encoder: patch embedding + three 3x3 convolutions on the 8 x 8 grid; decoder: attention + LSTM."""

    def __init__(self, config: CaptionerConfig) -> None:
        super().__init__()
        self.config = config
        c = config.channels
        self.patches = nn.Conv2d(1, c, PATCH, stride=PATCH)  # 32 x 32 -> 8 x 8 grid of patch vectors
        # Three 3x3 layers: each grid cell then sees 28 px around it, so one patch can carry a whole digit.
        self.convs = nn.Sequential(*[m for _ in range(3) for m in (nn.Conv2d(c, c, 3, padding=1), nn.ReLU())])
        self.position = nn.Parameter(
            torch.randn(1, GRID * GRID, c) * 0.1
        )  # hard attention must know where it looks
        self.word = nn.Embedding(VOCAB, config.word_dim)
        self.init_state = nn.Linear(c, 2 * config.hidden)
        self.cell = nn.LSTMCell(config.word_dim + c, config.hidden)
        self.att_features = nn.Linear(c, config.attention_dim)
        self.att_hidden = nn.Linear(config.hidden, config.attention_dim)
        self.att_score = nn.Linear(config.attention_dim, 1)
        self.out = nn.Linear(config.hidden + c, VOCAB)

    def borrow_encoder(self, other: Captioner) -> None:
        """Copy another captioner's encoder and keep it fixed: only attention and decoder learn."""
        for name in ENCODER:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, nn.Parameter):
                mine.data.copy_(theirs.data)
                mine.requires_grad_(False)
            else:
                mine.load_state_dict(theirs.state_dict())
                mine.requires_grad_(False)

    def encode(self, pixels: torch.Tensor) -> torch.Tensor:
        """(B, 32, 32) grey levels 0..16 -> (B, 64, C) patch features in raster order."""
        x = self.patches(pixels[:, None] / 16.0)
        x = x + self.convs(x)
        return x.flatten(2).transpose(1, 2) + self.position

    def start(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, c = self.init_state(features.mean(1)).tanh().chunk(2, dim=-1)
        return h.contiguous(), c.contiguous()

    def scores(self, features: torch.Tensor, keys: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """Additive attention scores (B, 64) of every patch for the next word, from the LSTM state."""
        return self.att_score(torch.tanh(keys + self.att_hidden(h)[:, None])).squeeze(-1)

    def step(self, features, keys, state, previous, context):
        """Feed the previous word and the context read; return logits (B, V) and the new state."""
        h, c = self.cell(torch.cat([self.word(previous), context], dim=-1), state)
        return self.out(torch.cat([h, context], dim=-1)), (h, c)


def read(features: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Context vector (B, C): the patches weighted by (B, 64) weights (one-hot for hard attention)."""
    return torch.einsum("bp,bpc->bc", weights, features)


def teacher_forced(
    model: Captioner, pixels: torch.Tensor, targets: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Logits (B, T, V), attention distributions (B, T, 64) and log-prob of the chosen patch (B, T).

    targets (B, T) are the words then END then anything; soft reads the weighted mean, hard samples a
    patch per word (its log-probability is what REINFORCE needs)."""
    features = model.encode(pixels)
    keys = model.att_features(features)
    state = model.start(features)
    previous = torch.full_like(targets[:, 0], START)
    logits, distributions, log_probs = [], [], []
    for t in range(targets.shape[1]):
        probs = torch.softmax(model.scores(features, keys, state[0]), dim=-1)
        if model.config.attention == "soft":
            weights = probs
            log_probs.append(torch.zeros_like(probs[:, 0]))
        else:
            choice = torch.multinomial(probs, 1, generator=generator)  # no gradient through the choice
            weights = torch.zeros_like(probs).scatter(1, choice, 1.0)
            log_probs.append(torch.log(probs.gather(1, choice).squeeze(1).clamp_min(1e-12)))
        step_logits, state = model.step(features, keys, state, previous, read(features, weights))
        logits.append(step_logits)
        distributions.append(probs)
        previous = targets[:, t].clamp_min(0)
    return torch.stack(logits, 1), torch.stack(distributions, 1), torch.stack(log_probs, 1)


@torch.no_grad()
@torch_threads(1)  # tiny model: on a busy CPU a second thread only spins
def caption(
    model: Captioner,
    pixels: torch.Tensor,
    sample_locations: bool = True,
    generator: torch.Generator | None = None,
) -> Caption:
    """Greedy words; hard attention samples its patch (or takes the arg-max when sample_locations is off)."""
    features = model.encode(pixels)
    keys = model.att_features(features)
    state = model.start(features)
    previous = torch.full((len(pixels),), START, dtype=torch.long)
    words, used, distributions, chosen = [], [], [], []
    for _ in range(MAX_STEPS):
        probs = torch.softmax(model.scores(features, keys, state[0]), dim=-1)
        if model.config.attention == "hard" and sample_locations:
            where = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        else:
            where = probs.argmax(-1)
        weights = (
            probs
            if model.config.attention == "soft"
            else nn.functional.one_hot(where, probs.shape[1]).float()
        )
        logits, state = model.step(features, keys, state, previous, read(features, weights))
        previous = logits.argmax(-1)
        words.append(previous)
        used.append(weights)
        distributions.append(probs)
        chosen.append(where)
    return Caption(*(torch.stack(x, 1) for x in (words, used, distributions, chosen)))
