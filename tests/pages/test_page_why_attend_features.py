"""Why Attend's feature mode under AppTest, on a tiny Llama saved as a folder: without a dictionary the
toggle says so and links to the Features page; with one built there, the score's feature pairs in words,
the error's share, the sum's check and a link per feature."""

import json
from urllib.parse import parse_qs

import numpy as np
import pytest
from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest
from tiny_models import WORDS, byte_bpe, tiny_model

from txviz import models
from txviz.app.ui import OTHER_MODEL
from txviz.atlas.corpus import of_text
from txviz.features.activations import Place
from txviz.features.build import build
from txviz.features.sae import Settings

PAGE = str(ROOT / "pages/23_Why_Attend.py")
SMALL = Settings(
    expansion=4, k=5, tokens=512, batch=64, lr=1e-3, aux_k=8, dead_after=128, window=16, held_out=128
)
LAYER = 1


def sentences(n: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(
        " ".join(rng.choice(WORDS, size=int(rng.integers(3, 8)))).capitalize() + "." for _ in range(n)
    )


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    """A two-block random Llama with a byte-level BPE of the tiny grammar's words, saved as a folder."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = byte_bpe([sentences(40, s) for s in range(3)], 200, bos_token="<s>", model_max_length=2048)
    tiny_model("llama", len(tokenizer), capture=False).save_pretrained(folder)
    tokenizer.save_pretrained(folder)  # tiny_model seeds the weights
    return str(folder)


@pytest.fixture
def features_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TXVIZ_FEATURES_DIR", str(tmp_path / "features"))
    return tmp_path / "features"


def opened(folder: str, **link) -> AppTest:
    """The page on the tiny Llama at block LAYER with the feature split asked for by the link."""
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["model"], at.session_state["model_custom"] = OTHER_MODEL, folder
    at.query_params.update(
        {k: json.dumps(v) for k, v in {"why_layer": LAYER, "why_features": True, **link}.items()}
    )
    at.run()
    assert_clean(at)
    assert at.toggle(key="why_features").value
    return at


def links_to_features(at) -> list[dict]:
    """The settings of every link to the Features page, with its label."""
    found = []
    for link in at.get("page_link"):
        if link.proto.page.rsplit("/", 1)[-1] == "Features":
            params = {k: json.loads(v[0]) for k, v in parse_qs(link.proto.query_string).items()}
            found.append({"label": link.proto.label, **params})
    return found


def test_without_a_dictionary_it_links_to_the_features_page(tiny_llama, features_dir):
    at = opened(tiny_llama)
    assert any("No dictionary" in i.value and f"decoder.{LAYER}.resid_pre" in i.value for i in at.info)
    (link,) = links_to_features(at)
    assert link == {"label": f"Train a dictionary at block {LAYER}'s input on the Features page",
                    "model": tiny_llama, "place": f"decoder.{LAYER}.resid_pre"}  # fmt: skip


def test_with_a_dictionary_it_shows_the_feature_pairs(tiny_llama, features_dir):
    loaded = models.load(tiny_llama, "cpu")  # as the page loads it: the same weights' id
    built = build(loaded, of_text("tiny text", sentences(150)), Place("resid_pre", LAYER), SMALL)
    assert built.done and str(features_dir) in str(built.folder)
    at = opened(tiny_llama)
    assert not any("No dictionary" in i.value for i in at.info)
    pairs = "\n".join(t.value for t in at.text)
    assert "(query) x feature" in pairs and "(key) adds" in pairs
    said = "\n".join(m.value for m in at.markdown)
    assert "reconstruction error" in said and "of the pairs' total size" in said
    check = next(m.value for m in at.markdown if m.value.startswith("Check: the"))
    assert float(check.rsplit("difference ", 1)[1].rstrip(").")) < 1e-3
    links = links_to_features(at)
    assert links and all(k["place"] == f"decoder.{LAYER}.resid_pre" for k in links)
    assert {k["label"] for k in links} == {f"Feature {k['feature']}" for k in links}
    at.radio(key="why_mode").set_value("this key rather than another").run()
    assert_clean(at)
    assert any(m.value.startswith("Check: the") for m in at.markdown)
    at.radio(key="why_mode").set_value("this key against the row").run()
    assert_clean(at)
    assert any("this key rather than another" in i.value for i in at.info)  # row mode: a note, no pairs
    at.toggle(key="why_features").set_value(False).run()
    assert_clean(at)
    assert not links_to_features(at)
