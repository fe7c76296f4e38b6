"""What the Head Atlas page redraws from a stored context agrees with what the builder stored."""

import numpy as np
import pytest
from atlas_helpers import SMALL, corpus, decoder, encoder

from txviz.atlas import build, opening
from txviz.atlas import view_model as views


@pytest.mark.parametrize("make", [decoder, encoder], ids=["decoder", "encoder"])
def test_the_redrawn_row_peaks_at_the_stored_key_with_the_stored_weight(make):
    loaded = make()
    atlas = build.build(loaded, corpus(12), SMALL)
    found = atlas.contexts["attention"]
    checked = 0
    for layer in range(atlas.layers):
        for head in range(atlas.heads):
            for rank in range(2):
                window = int(found.window[layer, head, rank])
                ids = tuple(views.window_ids(atlas, window))
                query, key = int(found.query[layer, head, rank]), int(found.key[layer, head, rank])
                row = opening.attention_row(loaded, ids, layer, head, query)
                sink = atlas.settings.sink
                assert row[key] == pytest.approx(float(found.value[layer, head, rank]), abs=1e-5)
                assert key == sink + int(np.argmax(row[sink:]))
                checked += 1
    assert checked == atlas.layers * atlas.heads * 2


@pytest.mark.parametrize("make", [decoder, encoder], ids=["decoder", "encoder"])
def test_a_windows_positions_land_on_the_same_tokens_in_its_text(make):
    loaded = make()
    atlas = build.build(loaded, corpus(12), SMALL)
    ids = views.window_ids(atlas, 1)
    text = loaded.tokenizer.decode(ids, skip_special_tokens=True)
    again = loaded.tokenizer(text)["input_ids"]
    where = opening.positions_in(loaded, ids, text)
    special = set(loaded.tokenizer.all_special_ids)
    placed = [p for p in range(len(ids)) if where(p) is not None]
    assert len(placed) == sum(t not in special for t in ids) > 10
    assert all(again[where(p)] == ids[p] for p in placed)
    elsewhere = opening.positions_in(loaded, ids, "cat")  # a text the window does not tokenize back from
    assert all(elsewhere(p) is None for p in range(len(ids)))
