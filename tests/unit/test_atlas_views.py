"""The Head Atlas page's tables from a hand-made atlas: the finder's order, percentiles and context lines."""

import numpy as np
import pytest
from atlas_fixtures import atlas

from txviz.atlas import view_model as views
from txviz.atlas.atlas import METRICS as ALL

METRICS = [m for m in ALL if m.name in ("previous_token", "first_token", "entropy")]


def test_the_finder_ranks_by_the_metric_with_blanks_last_and_filters_layers():
    found = atlas(layers=3, heads=4)
    table = views.finder(found, METRICS, "first_token")
    values = table["first token (sink)"].to_numpy()
    assert np.isnan(values[-1]) and (np.diff(values[:-1]) <= 0).all()
    assert len(table) == 12
    assert (table.iloc[0]["layer"], table.iloc[0]["head"]) == np.unravel_index(
        np.nanargmax(found.scores["first_token"]), (3, 4)
    )
    only = views.finder(found, METRICS, "entropy", [1])
    assert set(only["layer"]) == {1} and len(only) == 4


def test_the_percentile_counts_heads_at_or_below():
    found = atlas(layers=2, heads=3)
    values = found.scores["entropy"].ravel()
    for index, value in enumerate(values):
        layer, head = divmod(index, 3)
        expected = 100 * (values <= value).sum() / values.size
        assert views.percentile(found, "entropy", layer, head) == pytest.approx(expected)
    assert np.isnan(views.percentile(found, "first_token", 0, 0))


def test_a_line_marks_the_key_and_the_query_and_cuts_outside_the_span():
    pieces = [f"t{i} " for i in range(40)]
    text = views.line(pieces, query=20, key=18, span=2)
    assert text == "...t16 t17 [[t18 ]]t19 <<t20 >>t21 t22 ..."
    assert views.line(["a", "b"], 1, 1) == "a<<[[b]]>>"


def test_the_context_table_follows_the_stored_positions():
    found = atlas()
    decode = lambda ids: [str(i) for i in ids]  # noqa: E731
    table = views.context_table(found, "attention", 1, 2, decode)
    stored = found.contexts["attention"]
    assert table["value"].tolist() == pytest.approx(stored.value[1, 2].tolist())
    assert (table["rank"] == [1, 2, 3]).all()
    first = table.iloc[0]
    ids = views.window_ids(found, int(first["window"]))
    assert f"[[{ids[int(first['key'])]}]]" in first["text"]
    bands = views.band_table(found, "attention", 1, 2, decode)
    assert len(bands) == 4 and set(bands["band"]) == {1, 2}  # band 3 holds no sample


def test_text_pieces_read_as_the_text():
    import transformers as tf
    from atlas_helpers import bpe
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["[UNK]", "the", "play", "##ing", "cat", "."])}
    backend = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer, backend.decoder = pre_tokenizers.BertPreTokenizer(), decoders.WordPiece()
    wordpiece = tf.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    ids = wordpiece("the cat playing.", add_special_tokens=False)["input_ids"]
    assert views.text_pieces(wordpiece, ids) == ["the", " cat", " play", "ing", " ."]
    byte_level = bpe()
    ids = byte_level("The cat sat.", add_special_tokens=False)["input_ids"]
    assert "".join(views.text_pieces(byte_level, ids)) == byte_level.decode(ids)
