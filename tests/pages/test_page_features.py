"""The Features page under AppTest: small dictionaries of SmolLM2 built once, a feature opened from a link,
its widgets moved, a click on the map, the form that trains a new one, and the Head Atlas's list of the
features a head writes; no exception and no error box."""

import json

import pytest
from conftest import ROOT, assert_clean, plotly_array
from streamlit.testing.v1 import AppTest

from txviz.atlas.corpus import python_docs
from txviz.features import heads, opening
from txviz.features.activations import Place
from txviz.features.sae import Settings

PAGE = str(ROOT / "pages/25_Features.py")
SMALL = Settings(tokens=2048, batch=256, held_out=512, expansion=2, k=8, window=64)
STREAM, HEADS = Place("resid_pre", 15), Place("head_out", 15)


@pytest.fixture(scope="module")
def dictionaries(smollm2, tmp_path_factory):
    """Two small dictionaries of SmolLM2's block 15 (its input stream and its heads) in a folder of their own."""
    folder = tmp_path_factory.mktemp("features")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TXVIZ_FEATURES_DIR", str(folder))
        built = {p: opening.open_or_build(smollm2, python_docs(), p, SMALL) for p in (STREAM, HEADS)}
    return folder, built


@pytest.fixture(autouse=True)
def _features_dir(dictionaries, monkeypatch):
    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(dictionaries[0]))


def opened(**link) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params.update({k: json.dumps(v) for k, v in {"model": "smollm2", **link}.items()})
    at.run()
    assert_clean(at)
    return at


def live_feature(built, place: Place) -> int:
    """A feature that fired on the indexed tokens (its page has contexts)."""
    index = built[place].index
    return int(index.density.argsort()[-3])


def test_a_link_opens_a_feature_with_contexts_shaded_logit_effects_and_samples(dictionaries):
    _, built = dictionaries
    feature = live_feature(built, STREAM)
    at = opened(place=STREAM.name, feature=feature)
    assert at.number_input(key="feature").value == feature
    charts = {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    assert len(charts) == 2
    contexts = next(s for s in charts.values() if "top contexts" in s["layout"]["title"]["text"])
    shading = plotly_array(contexts["data"][0]["z"])
    index = built[STREAM].index
    peak = index.contexts(feature)[0][2]
    assert abs(float(shading[0][~(shading[0] != shading[0])].max()) - peak) < 1e-4  # the first row's peak
    assert any("fires on" in m.label for m in at.metric)
    assert any("[[" in str(v) for d in at.dataframe for v in d.value["context"])  # the decile samples
    at.number_input(key="feature").set_value(live_feature(built, STREAM) + 1).run()
    assert_clean(at)


def test_the_map_draws_every_live_feature_and_a_click_opens_one(dictionaries):
    _, built = dictionaries
    at = opened(place=STREAM.name, features_view="Feature map")
    (chart,) = [c for c in at.get("plotly_chart") if "features_map" in c.proto.id]
    spec = json.loads(chart.proto.spec)
    index = built[STREAM].index
    assert len(plotly_array(spec["data"][0]["x"])) == int((index.density > 0).sum())
    (why,) = [link.proto for link in at.get("page_link") if "Why Attend" in link.proto.label]
    assert "why_layer=15" in why.query_string and "why_features=true" in why.query_string
    target = live_feature(built, STREAM)
    states = at._tree.get_widget_states()  # AppTest has no public way to send a chart's event
    state = states.widgets.add()
    state.id = chart.proto.id
    state.string_value = json.dumps({"selection": {"points": [{"customdata": target}]}})
    at._run(states)
    assert_clean(at)
    assert at.number_input(key="feature").value == target and at.session_state["features_view"] == "Feature"


def test_a_heads_place_says_which_head_writes_the_feature(dictionaries):
    _, built = dictionaries
    at = opened(place=HEADS.name, feature=live_feature(built, HEADS))
    assert any(m.label == "Written mostly by" for m in at.metric)
    (bars,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "features_heads" in c.proto.id]
    shares = plotly_array(bars["data"][0]["y"])
    assert len(shares) == 9 and abs(shares.sum() - 1) < 1e-5
    (atlas,) = [link.proto for link in at.get("page_link") if "Head Atlas" in link.proto.label]
    assert f"head={int(shares.argmax())}" in atlas.query_string and "layer=15" in atlas.query_string
    at = opened(place=HEADS.name, features_view="Feature map")
    (table,) = [d for d in at.dataframe if "head" in d.value.columns]
    assert len(table.value) == 9  # SmolLM2: nine heads a block


def test_a_new_dictionary_says_its_memory_first_and_waits_for_its_button(dictionaries):
    at = opened(place=STREAM.name)
    at.selectbox(key="features_dictionary").set_value("Train a new dictionary").run()
    assert_clean(at)
    at.select_slider(key="features_tokens").set_value(262_144).run()
    assert_clean(at)
    assert any("of memory" in c.value for c in at.caption)
    assert [b.label for b in at.button if b.key == "features_train"] == ["Train the dictionary"]
    assert not at.get("plotly_chart")  # nothing trains until asked


def test_the_head_atlas_lists_the_features_a_head_writes(smollm2, dictionaries):
    at = AppTest.from_function(_head_page, default_timeout=300, kwargs={"layer": 15, "head": 4})
    at.run()
    assert_clean(at)
    links = [link.proto.label for link in at.get("page_link")]
    opened_heads = dictionaries[1][HEADS]
    expected = heads.written_by(opened_heads.index, opened_heads.sae, smollm2.n_heads, 4)
    assert links and [int(label.split()[1].rstrip(":")) for label in links] == [f for f, *_ in expected]


def test_the_head_atlas_offers_to_train_one_where_there_is_none(monkeypatch, tmp_path):
    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(tmp_path))
    at = AppTest.from_function(_head_page, default_timeout=300, kwargs={"layer": 3, "head": 0})
    at.run()
    assert_clean(at)
    (link,) = at.get("page_link")
    assert "Train a dictionary of block 3's heads" in link.proto.label
    assert "decoder.3.head_out" in link.proto.query_string


def _head_page(layer: int, head: int) -> None:
    from txviz import models
    from txviz.features import views

    views.written_by_head(models.load("smollm2", "cpu"), "smollm2", layer, head)


def test_a_dictionary_the_disk_refuses_stays_open_after_its_button(dictionaries, monkeypatch, tmp_path):
    from txviz.features import store
    from txviz.features.index import FeatureIndex

    def full(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(tmp_path))
    monkeypatch.setattr(opening, "BUDGETS", (1024, 2048))  # small budgets: the second waits for its button
    monkeypatch.setattr(store, "save", full)
    monkeypatch.setattr(FeatureIndex, "save", full)
    at = opened(place=STREAM.name)
    at.select_slider(key="features_tokens").set_value(2048).run()
    assert [b.key for b in at.button] == ["features_train"]
    at.button(key="features_train").click().run()
    assert_clean(at)
    assert any("could not be stored" in w.value for w in at.warning) and at.get("plotly_chart")
    at.number_input(key="feature").increment().run()  # the next rerun: still open, no button
    assert_clean(at)
    assert at.get("plotly_chart") and not list(tmp_path.iterdir())
