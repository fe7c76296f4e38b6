"""The Head Atlas page under AppTest: built on a tiny model and corpus, its widgets moved, a head opened
from a link, two models side by side; no exception and no error box."""

import json
from urllib.parse import parse_qs

import numpy as np
import pytest
from conftest import ROOT, assert_clean, click_grid, plotly_array
from streamlit.testing.v1 import AppTest

from txviz.atlas.corpus import python_docs
from txviz.atlas.opening import EXAMPLES, SMALL_CORPUS_CHARS

PAGE = str(ROOT / "pages/24_Head_Atlas.py")


@pytest.fixture(autouse=True)
def _atlas_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TXVIZ_ATLAS_DIR", str(tmp_path / "atlas"))


def opened(**link) -> AppTest:
    """The page on the tiny MLM over six sentences in 16-token windows, plus the ``link``'s settings."""
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update(
        {
            k: json.dumps(v)
            for k, v in {**dict(model="tiny-mlm", atlas_corpus=EXAMPLES, atlas_window=16), **link}.items()
        }
    )
    at.run()
    assert_clean(at)
    assert at.toggle(key="atlas_open").value  # a corpus of six sentences opens by itself
    return at


def test_the_map_moves_without_exception():
    at = opened()
    assert at.session_state["atlas_view"] == "Map"
    options = at.selectbox(key="metric").options
    assert len(options) >= 3
    for option in options[:3]:
        at.selectbox(key="metric").set_value(at.selectbox(key="metric").options[options.index(option)]).run()
        assert_clean(at, option)
    at.selectbox(key="metric_y").select_index(1).run()
    at.selectbox(key="finder_rank").select_index(2).run()
    at.multiselect(key="finder_layers").set_value([1]).run()
    assert_clean(at)
    (finder,) = [d for d in at.dataframe if "layer" in d.value.columns]
    assert set(finder.value["layer"]) == {1} and len(finder.value) == 4  # tiny-mlm: 4 heads a layer
    click_grid(at, "atlas_grid", 1, 3)
    assert_clean(at)
    assert (at.number_input(key="layer").value, at.number_input(key="head").value) == (1, 3)
    assert at.session_state["atlas_view"] == "Head"  # the click opened the head's page
    assert at.query_params["layer"] == "1" and at.query_params["head"] == "3"


def test_a_link_to_a_head_opens_its_page_with_contexts_circuits_and_links():
    at = opened(model="minilm", layer=1, head=2)  # a real vocabulary: the context's text tokenizes back
    assert at.session_state["atlas_view"] == "Head"
    assert (at.number_input(key="layer").value, at.number_input(key="head").value) == (1, 2)
    assert any("OV copying" in m.label for m in at.metric)
    assert any("[[" in t.value for t in at.text)  # the context's line with its key marked
    at.selectbox(key="context").select_index(2).run()
    assert_clean(at)
    links = [p for p in at.get("page_link") if not p.proto.label.startswith(("Back:", "Next:"))]
    targets = {p.proto.page.rsplit("/", 1)[-1]: p for p in links}
    assert {"Attention_Explorer", "Why_Attend"} <= set(targets)
    params = {k: json.loads(v[0]) for k, v in parse_qs(targets["Why_Attend"].proto.query_string).items()}
    assert (params["why_layer"], params["why_head"], params["model"]) == (1, 2, "minilm")
    assert "why_query" in params and "why_key" in params  # the context's positions in Why Attend's tokens
    why = AppTest.from_file(str(ROOT / "pages/23_Why_Attend.py"), default_timeout=300)
    why.query_params.update({k: v[0] for k, v in parse_qs(targets["Why_Attend"].proto.query_string).items()})
    why.run()
    assert_clean(why)
    assert why.selectbox(key="why_query").value == params["why_query"]
    explorer = {k: v[0] for k, v in parse_qs(targets["Attention_Explorer"].proto.query_string).items()}
    page = AppTest.from_file(str(ROOT / "pages/2_Attention_Explorer.py"), default_timeout=300)
    page.query_params.update(explorer)
    page.run()
    assert_clean(page)
    assert (page.slider(key="layer").value, page.slider(key="head").value) == (1, 2)


def test_two_models_side_by_side():
    at = opened(atlas_view="Two models", model_b="minilm")
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 2  # the two grids: only this tab is drawn
    assert any("do not pair up" in c.value for c in at.caption)  # 2 x 4 heads against 6 x 12
    at.selectbox(key="cmp_metric").select_index(1).run()
    assert_clean(at)


def test_the_installed_corpus_opens_on_its_first_slice_and_all_of_it_waits_for_the_switch():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update({"model": json.dumps("tiny-mlm")})
    at.run()
    assert_clean(at)
    assert at.radio(key="atlas_corpus").value != EXAMPLES  # the installed corpus comes first
    chars = at.select_slider(key="atlas_chars")
    assert chars.value == SMALL_CORPUS_CHARS and chars.options[-1] == "all"  # its first slice, opened at once
    assert at.toggle(key="atlas_open").value and at.get("tabs")
    chars.set_value(len(python_docs().text)).run()  # all of it: minutes, so only when asked
    assert_clean(at)
    assert not at.toggle(key="atlas_open").value and not at.get("tabs")
    assert len(at.get("vega_lite_chart")) == 1  # tiny-mlm has no unembedding: the QK copying grid only


def click_scatter(at, key: str, layer: int, head: int):
    """A click on a point of the plotly scatter ``key``, as the frontend reports it (see conftest.click_grid)."""
    (chart,) = [c for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id]
    states = at._tree.get_widget_states()  # AppTest has no public way to send a chart's event
    state = states.widgets.add()
    state.id = chart.proto.id
    state.string_value = json.dumps({"selection": {"points": [{"customdata": [layer, head]}]}})
    return at._run(states)


def test_clicking_a_point_of_the_scatter_picks_that_head():
    at = opened()
    click_scatter(at, "atlas_scatter", 1, 2)
    assert_clean(at)
    assert (at.number_input(key="layer").value, at.number_input(key="head").value) == (1, 2)
    assert at.session_state["atlas_view"] == "Head" and any(
        "Layer 1, head 2" in h.value for h in at.subheader
    )


@pytest.fixture(scope="module")
def one_head_gpt2(tmp_path_factory):
    """A one-layer, one-head GPT-2 with SmolLM2's tokenizer, saved as a folder."""
    import torch
    import transformers as tf

    from txviz.models.registry import smollm2_folder

    folder = tmp_path_factory.mktemp("gpt2-1x1")
    tokenizer = tf.AutoTokenizer.from_pretrained(smollm2_folder())
    torch.manual_seed(0)
    config = tf.GPT2Config(vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=1, n_positions=64)
    tf.GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_a_one_layer_one_head_decoder_has_a_map_and_a_head_page(one_head_gpt2):
    from txviz.app.ui import OTHER_MODEL

    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["model"], at.session_state["model_custom"] = OTHER_MODEL, one_head_gpt2
    at.query_params.update({"atlas_corpus": json.dumps(EXAMPLES), "atlas_window": json.dumps(32)})
    at.run()
    assert_clean(at)
    assert {"Layer 0 (the only one)", "Head 0 (the only one)"} <= {c.value for c in at.caption}
    at.session_state["atlas_view"] = "Head"
    at.run()
    assert_clean(at)
    assert any("OV copying" in m.label and m.value != "no unembedding" for m in at.metric)  # tied: it has one
    assert any(p.proto.page.endswith("Interventions") for p in at.get("page_link"))  # a decoder: ablate


def test_another_corpus_that_would_take_long_closes_the_atlas_until_asked():
    at = opened()
    names = at.radio(key="atlas_corpus").options
    large = next(n for n in names if n not in (EXAMPLES, "Upload a text file"))
    at.radio(key="atlas_corpus").set_value(large).run()
    at.select_slider(key="atlas_chars").set_value(len(python_docs().text)).run()  # all of it
    assert_clean(at)
    assert not at.toggle(key="atlas_open").value and not at.get("tabs")  # no build started by the switch
    at.radio(key="atlas_corpus").set_value(EXAMPLES).run()
    assert_clean(at)
    assert at.toggle(key="atlas_open").value and at.get("tabs")  # stored now: open again


def test_two_atlases_of_the_same_shape_pair_their_heads():
    at = opened(atlas_view="Two models", model_b="tiny-mlm")
    (pair,) = [c for c in at.get("plotly_chart") if "cmp_pair" in c.proto.id]
    figure = json.loads(pair.proto.spec)
    xs, ys = (plotly_array(figure["data"][1][axis]) for axis in ("x", "y"))
    assert len(xs) == 8  # 2 layers x 4 heads, one point each
    assert np.array_equal(xs, ys, equal_nan=True)  # the same model and corpus: every head on the diagonal


def test_a_second_atlas_that_would_take_long_waits_for_its_button(monkeypatch):
    """The Two models tab builds the second model's atlas by itself only when stored or quick to build."""
    from txviz.app import ui
    from txviz.atlas import opening, store

    ui.clear_cached()  # atlases built by other tests are not cached here
    monkeypatch.setattr(opening, "QUICK_LAYER_CHARS", 0)  # every unstored build counts as long
    built = []
    build = store.open_or_build
    monkeypatch.setattr(
        store, "open_or_build", lambda loaded, *a, **k: built.append(loaded.name) or build(loaded, *a, **k)
    )
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update(
        {k: json.dumps(v) for k, v in dict(model="tiny-mlm", atlas_corpus=EXAMPLES, atlas_window=16,
                                           atlas_open=True, atlas_view="Two models", model_b="minilm").items()}
    )  # fmt: skip
    at.run()
    assert_clean(at)
    assert "minilm" not in built and len(at.get("vega_lite_chart")) == 0
    assert any("not stored yet" in i.value for i in at.info)
    at.button(key="cmp_build").click().run()
    assert_clean(at)
    assert "minilm" in built and len(at.get("vega_lite_chart")) == 2
    at.selectbox(key="cmp_metric").select_index(1).run()  # stored now: it opens without the button
    assert_clean(at)
    assert len(at.get("vega_lite_chart")) == 2
