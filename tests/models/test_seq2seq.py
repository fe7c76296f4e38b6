"""The date task, the shipped date model, step-by-step decoding and its figures."""

from __future__ import annotations

import copy
import datetime as dt

import numpy as np
import pytest
import torch
from conftest import plotly_array
from tiny_models import tiny_model

from txviz import models
from txviz.core.errors import WrongModelKind
from txviz.figures.text import plain_all
from txviz.models import LoadedModel
from txviz.seq2seq import dates
from txviz.seq2seq import figures as figs
from txviz.seq2seq.decoding import decode
from txviz.training import seq2seq as training

SOURCE = "twenty second of november two thousand twenty six"


@pytest.fixture(scope="module")
def date_model() -> LoadedModel:
    return models.load("date-bart", "cpu")


@pytest.fixture(scope="module")
def greedy(date_model):
    return decode(date_model, SOURCE)


# The task data


def test_words_follow_english():
    assert dates.date_to_words(dt.date(2026, 11, 22)) == SOURCE
    assert dates.date_to_words(dt.date(1999, 3, 1), dates.TEMPLATES[2]) == (
        "march first nineteen ninety nine"
    )
    assert dates.year_words(2000) == "two thousand"
    assert dates.year_words(2007) == "two thousand seven"
    assert dates.year_words(1950) == "nineteen fifty"
    assert dates.ordinal(30) == "thirtieth" and dates.ordinal(13) == "thirteenth"


def test_heldout_days_never_appear_in_training():
    train_dates, heldout_dates = dates.split_dates()
    assert len(heldout_dates) == dates.HELDOUT_DATES
    assert not set(train_dates) & set(heldout_dates)
    assert len(train_dates) + len(heldout_dates) == len(dates.all_dates())
    train, heldout = dates.train_and_heldout()
    assert not {p.target for p in train} & {p.target for p in heldout}
    assert not {p.source for p in train} & {p.source for p in heldout}


def test_data_is_fixed_by_the_seed():
    assert dates.train_and_heldout()[1][:5] == dates.train_and_heldout()[1][:5]
    assert dates.train_and_heldout(1)[1][:5] != dates.train_and_heldout()[1][:5]


def test_tokenizer_reads_words_and_writes_iso():
    tokenizer = training.build_tokenizer()
    ids = tokenizer("2026-11-22").input_ids
    assert tokenizer.convert_ids_to_tokens(ids) == [*"2026-11-22", "</s>"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "2026-11-22"
    words = tokenizer(SOURCE).input_ids
    assert tokenizer.unk_token_id not in words and len(words) == len(SOURCE.split()) + 1


# The shipped model


def test_model_reaches_its_stated_heldout_accuracy(date_model):
    stated = date_model.meta["heldout_exact_match"]
    _, heldout = dates.train_and_heldout()
    measured = training.exact_match(date_model.model, date_model.tokenizer, heldout)
    assert measured >= stated - 0.002
    assert stated >= 0.95
    assert date_model.kind == "encoder-decoder"


def test_shipped_weights_are_small(date_model):
    size = (models.registry.ASSET_MODELS / "date-bart" / "model.safetensors").stat().st_size
    assert size < 5_000_000


# Decoding


def test_greedy_decoding_reorders_the_date(greedy):
    assert greedy.output_text == "2026-11-22"
    assert greedy.finished
    assert greedy.target_tokens == ("<s>", *"2026-11-22")
    assert [s.token for s in greedy.steps] == [*"2026-11-22", "</s>"]
    assert greedy.encoder.weights.shape == (2, 4, 9, 9)
    assert greedy.decoder.weights.shape == (2, 4, 11, 11)
    assert greedy.cross.weights.shape == (2, 4, 11, 9)


def test_greedy_equals_transformers_generate_and_its_scores(date_model, greedy):
    enc = date_model.tokenizer(SOURCE, return_tensors="pt")
    out = date_model.model.generate(
        **enc,
        max_new_tokens=20,
        num_beams=1,
        do_sample=False,
        output_scores=True,
        return_dict_in_generate=True,
    )
    assert out.sequences[0].tolist() == [0, *[s.token_id for s in greedy.steps]]
    probs = [float(torch.softmax(s[0], -1).max()) for s in out.scores]
    assert np.allclose([s.probability for s in greedy.steps], probs, atol=1e-5)
    for step in greedy.steps:  # greedy picks the most probable token
        assert step.token_id == step.candidates.ids[0]


def test_beam_search_finds_generates_answer(date_model):
    source = "march first nineteen ninety nine"
    trace = decode(date_model, source, method="beam", beams=3)
    enc = date_model.tokenizer(source, return_tensors="pt")
    ids = date_model.model.generate(**enc, max_new_tokens=20, num_beams=3, do_sample=False)
    assert trace.output_text == date_model.tokenizer.decode(ids[0], skip_special_tokens=True)
    assert trace.output_text == "1999-03-01"
    assert all(len(s.beams) <= 3 for s in trace.steps)
    first = trace.steps[0].beams
    assert first[0][1] >= first[-1][1]  # best first


def _eager_attentions(loaded: LoadedModel, trace, source: str):
    """The same forward pass under transformers' eager attention with output_attentions."""
    eager = copy.deepcopy(loaded.model)  # never switch the shared model
    eager.set_attn_implementation("eager")
    enc = loaded.tokenizer(source, return_tensors="pt")
    start = loaded.model.generation_config.decoder_start_token_id
    decoder_ids = [start, *[s.token_id for s in trace.steps[:-1]]]
    with torch.no_grad():
        return eager(**enc, decoder_input_ids=torch.tensor([decoder_ids]), output_attentions=True)


def _assert_same_attention(trace, out):
    expected_cross = np.stack([a[0].numpy() for a in out.cross_attentions])
    expected_decoder = np.stack([a[0].numpy() for a in out.decoder_attentions])
    expected_encoder = np.stack([a[0].numpy() for a in out.encoder_attentions])
    np.testing.assert_allclose(trace.cross.weights, expected_cross, atol=1e-5)
    np.testing.assert_allclose(trace.decoder.weights, expected_decoder, atol=1e-5)
    np.testing.assert_allclose(trace.encoder.weights, expected_encoder, atol=1e-5)


def test_captured_attention_equals_output_attentions(date_model, greedy):
    _assert_same_attention(greedy, _eager_attentions(date_model, greedy, SOURCE))


def test_attention_rows_are_distributions_and_the_decoder_is_masked(greedy):
    for part in (greedy.encoder, greedy.decoder, greedy.cross):
        np.testing.assert_allclose(part.weights.sum(-1), 1.0, atol=1e-5)
    upper = np.triu(np.ones((11, 11), dtype=bool), k=1)
    assert np.all(greedy.decoder.weights[:, :, upper] == 0)
    assert greedy.cross.kind == "cross" and greedy.decoder.kind == "causal"


def test_cross_attention_aligns_output_with_source_words(greedy):
    # Averaged over heads of the last layer: writing the day looks at the day words, the
    # month digits at "november", the last year digits at the year words.
    where = greedy.cross.weights[-1].mean(0).argmax(-1)  # (T,)
    source = greedy.source_tokens
    assert source[where[5]] == "november" and source[where[6]] == "november"
    assert {source[where[8]], source[where[9]]} <= {"twenty", "second"}
    assert where[8] < 2 and where[3] >= 4


def tiny_marian(seed: int, eos_bias: float = 0.0, decoder_layers: int = 3) -> LoadedModel:
    """A random Marian (pad is its decoder start token) over the date vocabulary."""
    tokenizer = training.build_tokenizer()
    model = tiny_model(
        "marian",
        len(tokenizer),
        seed,
        decoder_layers=decoder_layers,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
        forced_eos_token_id=None,
    )
    with torch.no_grad():  # a random model: shift how often it ends, so beams end at different steps
        model.final_logits_bias[0, tokenizer.eos_token_id] = eos_bias
    return LoadedModel("tiny-marian", "encoder-decoder", model, tokenizer, None, "cpu")


def test_any_encoder_decoder_works_marian_with_pad_as_start():
    loaded = tiny_marian(0)
    trace = decode(loaded, "may fifth", max_new_tokens=6)
    assert trace.cross.n_layers == 3 and trace.encoder.n_layers == 1
    assert trace.cross.n_heads == 4 and trace.encoder.n_heads == 2
    assert loaded.tokenizer.pad_token_id not in [s.token_id for s in trace.steps]  # never chosen
    _assert_same_attention(trace, _eager_attentions(loaded, trace, "may fifth"))


@pytest.mark.parametrize(("seed", "eos_bias", "ends_early"), [(3, 0.1, True), (1, -0.3, False)])
def test_beam_search_equals_transformers_on_a_random_model(seed, eos_bias, ends_early):
    loaded = tiny_marian(seed, eos_bias, decoder_layers=2)
    tokenizer, source = loaded.tokenizer, "the first of june nineteen ninety"
    for beams in (2, 3, 5):
        trace = decode(loaded, source, method="beam", beams=beams, max_new_tokens=8)
        expected = loaded.model.generate(
            **tokenizer(source, return_tensors="pt"),
            max_new_tokens=8,
            num_beams=beams,
            do_sample=False,
            bad_words_ids=[[tokenizer.pad_token_id], [tokenizer.bos_token_id]],
        )[0].tolist()
        ours = [tokenizer.pad_token_id, *[s.token_id for s in trace.steps]]
        assert expected[: len(ours)] == ours
        assert all(t == tokenizer.pad_token_id for t in expected[len(ours) :])  # batch padding
        assert trace.finished == ends_early and (len(ours) < 9) == ends_early


# Bad input


def test_empty_source_is_refused(date_model):
    with pytest.raises(ValueError, match="empty"):
        decode(date_model, "   ")


def test_long_source_is_cut_with_a_notice(date_model):
    trace = decode(date_model, " ".join([SOURCE] * 20), max_new_tokens=15)
    assert "first 32" in trace.notice
    assert len(trace.source_tokens) == 32
    assert trace.cross.weights.shape[-1] == 32


def test_unknown_words_are_reported(date_model):
    trace = decode(date_model, "the 22nd of November")
    assert "unknown" in trace.notice


def test_a_model_of_another_kind_is_refused():
    encoder = LoadedModel("enc", "encoder", None, None, None, "cpu")
    with pytest.raises(WrongModelKind, match="encoder-decoder"):
        decode(encoder, SOURCE)


def test_bad_settings_are_refused(date_model):
    with pytest.raises(ValueError):
        decode(date_model, SOURCE, method="sampling")
    with pytest.raises(ValueError):
        decode(date_model, SOURCE, max_new_tokens=0)
    with pytest.raises(ValueError):
        decode(date_model, SOURCE, method="beam", beams=0)


# Figures


def test_alignment_heatmap_holds_the_cross_attention(greedy):
    fig = figs.attention_head(greedy, "cross", 1, 2).to_dict()
    z = plotly_array(fig["data"][0]["customdata"])
    np.testing.assert_allclose(z, greedy.cross.weights[1, 2], atol=1e-7)
    assert list(fig["layout"]["xaxis"]["ticktext"]) == plain_all(greedy.source_tokens)  # <s> escaped
    assert fig["layout"]["yaxis"]["ticktext"][0] == "&lt;s&gt; → 2"


def test_step_limits_the_rows_and_the_decoder_future_is_blank(greedy):
    fig = figs.attention_head(greedy, "decoder", 0, 0, step=3).to_dict()
    z = plotly_array(fig["data"][0]["z"])
    assert z.shape == (4, 4)
    assert np.isnan(z[0, 1]) and not np.isnan(z[3, 3])
    with pytest.raises(ValueError, match="Step 11"):
        figs.attention_head(greedy, "cross", 0, 0, step=11)


def test_step_view_bars_are_that_steps_rows(greedy):
    fig = figs.step_attention(greedy, 4, 1, 3).to_dict()
    np.testing.assert_allclose(plotly_array(fig["data"][0]["y"]), greedy.cross.weights[1, 3, 4], atol=1e-7)
    np.testing.assert_allclose(
        plotly_array(fig["data"][1]["y"]), greedy.decoder.weights[1, 3, 4, :5], atol=1e-7
    )


def test_probability_figures(greedy):
    fig = figs.chosen_probabilities(greedy, 2).to_dict()
    np.testing.assert_allclose(plotly_array(fig["data"][0]["y"]), [s.probability for s in greedy.steps])
    alt = figs.step_alternatives(greedy.steps[2]).to_dict()
    assert alt["data"][0]["marker"]["color"][0] == figs.CHOSEN
    assert plotly_array(alt["data"][0]["x"]).sum() <= 1.0 + 1e-6


def test_mosaic_of_every_head(greedy):
    fig = figs.all_heads(greedy, "encoder").to_dict()
    assert fig["data"][0]["type"] == "image"
    with pytest.raises(ValueError):
        figs.all_heads(greedy, "sideways")
