"""What an atlas holds: per-head scores over a corpus and each head's top contexts, as token positions.

This module is the contract between the builder (txviz.atlas.build), the store (txviz.atlas.store) and
the pages: arrays only, no model and no maps, so a stored atlas opens without loading anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FORMAT = 1  # bump when what is stored changes: an atlas of another format is rebuilt with a notice


@dataclass(frozen=True)
class Metric:
    """One per-head score: its key, its label, and what it means for causal and bidirectional models."""

    name: str
    label: str
    description: str
    encoder_note: str = ""  # how the meaning changes when keys after the query are visible ("" if none)


@dataclass(frozen=True)
class Settings:
    """How an atlas is built; part of its key on disk."""

    window: int = 256  # tokens per window; the corpus is cut into consecutive windows
    batch: int = 8  # windows per forward
    top_k: int = 16  # top contexts kept per head and criterion
    deciles: int = 10  # value bands sampled below the top, as HeadVis samples activations
    per_decile: int = 2  # contexts kept per band
    sink: int = 1  # the first `sink` keys are sinks: the attention criterion ignores them
    seed: int = 0  # the decile samples' random draw


@dataclass(frozen=True)
class Contexts:
    """One criterion's contexts for every head: where (window, query, key) and how strongly (value).

    Arrays are [layer, head, k]: the top k in descending value; ``bands`` the same fields [layer, head,
    deciles, per_decile] sampled from each decile band of the criterion's values (-1 where a band had none).
    """

    criterion: str  # "attention": the largest weight to a non-sink key; "output": the head output's norm
    window: np.ndarray  # int32, index into Atlas.tokens
    query: np.ndarray  # int32, the query position in its window
    key: np.ndarray  # int32, the key of the query row's largest non-sink weight
    value: np.ndarray  # float32, the criterion's value
    band_window: np.ndarray
    band_query: np.ndarray
    band_key: np.ndarray
    band_value: np.ndarray


@dataclass(frozen=True, eq=False)
class Atlas:
    """Every head of one model over one corpus."""

    model: str  # the model's name as the app loads it
    model_id: str  # what identifies the weights (hub id and revision, or a folder and its files' hash)
    corpus: str  # the corpus's name as shown
    corpus_hash: str  # sha256 of the corpus's bytes
    settings: Settings
    causal: bool
    layers: int
    heads: int
    tokens: np.ndarray  # int32 [windows, window]: the corpus's token ids, -1 past a short last window
    scores: dict[str, np.ndarray]  # Metric.name -> float32 [layer, head], NaN where never measurable
    contexts: dict[str, Contexts]  # criterion -> its contexts
    notices: tuple[str, ...] = ()  # what was cut or could not be measured, for the page to show
    seconds: float = 0.0  # build time
    format: int = FORMAT
    extra: dict = field(default_factory=dict)  # per-head summaries added later (e.g. circuits)

    @property
    def n_tokens(self) -> int:
        return int((self.tokens >= 0).sum())

    def score(self, metric: str, layer: int, head: int) -> float:
        return float(self.scores[metric][layer, head])


CRITERIA = ("attention", "output")  # what ranks a head's contexts (Contexts.criterion)

# Every per-head score, in the order the pages list them. The target ones are Head Detectors' own
# definitions (txviz.heads.detectors.text_targets): a head's share of each row's attention on the
# targets, averaged over the rows where the behaviour is possible.
METRICS = (
    Metric(
        "previous_token",
        "previous token",
        "attention from each token to the one before it",
        "unchanged: the token before is visible either way",
    ),
    Metric(
        "induction",
        "induction",
        "attention to the token after an earlier copy of the query's token",
        "only earlier copies count, though a bidirectional head also sees later ones",
    ),
    Metric(
        "duplicate_token",
        "duplicate token",
        "attention to earlier copies of the query's token",
        "only earlier copies count, though a bidirectional head also sees later ones",
    ),
    Metric(
        "first_token",
        "first token (sink)",
        "attention to position 0, where many heads park weight they do not need",
        "position 0 is [CLS]: a summary token, not only a sink",
    ),
    Metric(
        "punctuation",
        "punctuation",
        "attention to tokens made only of punctuation",
        "punctuation after the query counts too",
    ),
    Metric(
        "local",
        "local share",
        "attention to keys at most 8 positions from the query",
        "keys after the query count too: both sides of the window",
    ),
    Metric(
        "distance",
        "mean distance",
        "expected |query - key| in tokens",
        "measured both ways: a bidirectional head can look ahead",
    ),
    Metric(
        "entropy",
        "entropy",
        "row entropy in nats: low is focused, high is spread out",
        "every row sees the whole window, so its maximum is the same for every query",
    ),
)
