"""The Head Atlas page's views: the atlas opened above the tabs (opened), the map and two models
(overview), one head's page (head); here, what the tabs share."""

from __future__ import annotations

from dataclasses import dataclass

from txviz.atlas.atlas import Atlas, Metric
from txviz.atlas.corpus import AtlasCorpus


@dataclass(frozen=True)
class Opened:
    """What every tab reads: the model's name, the corpus and its window, the atlas, its measured metrics
    and the picked head."""

    name: str
    corpus: AtlasCorpus
    window: int
    atlas: Atlas
    metrics: tuple[Metric, ...]
    layer: int
    head: int

    @property
    def by_name(self) -> dict[str, Metric]:
        return {m.name: m for m in self.metrics}
