"""The views of the four small trained models: the mask or not, NAT trained for it, fine-tuning, relatedness."""

from __future__ import annotations

import json

from conftest import ROOT, assert_clean
from streamlit.testing.v1 import AppTest

MASKING = str(ROOT / "pages" / "5_Masking_Patterns.py")
ENCODER_DECODER = str(ROOT / "pages" / "9_Encoder_Decoder.py")
ENTAILMENT = str(ROOT / "pages" / "15_Entailment.py")


def run_page(page: str, view: str | None = None, timeout: int = 180) -> AppTest:
    at = AppTest.from_file(page, default_timeout=timeout)
    if view:
        at.session_state["view"] = view
    return at.run()


def test_why_a_decoder_needs_its_mask_tab():
    at = run_page(MASKING, "Why a decoder needs its mask")
    assert_clean(at)
    runs = json.loads((ROOT / "assets" / "peeking" / "runs.json").read_text())
    scores = at.main.dataframe[0].value
    assert list(scores["held-out generation exact"]) == [
        round(runs[m]["heldout_generation_exact"], 3) for m in ("causal", "none")
    ]
    answers = at.main.dataframe[1].value
    assert answers["generated"].iloc[0] == "three one and four" and answers["right"].iloc[0]
    assert not answers["right"].iloc[1]
    at.text_input(key="peek_digits").set_value("9 8").run()
    assert_clean(at)
    assert at.main.dataframe[1].value["generated"].iloc[0] == "nine and eight"
    at.text_input(key="peek_digits").set_value("1 0 3").run()
    assert not at.exception and any("no 0" in e.value for e in at.error)


def test_the_encoder_tab_compares_fine_tuning_with_the_frozen_heads():
    at = run_page(MASKING, "Using the encoder")
    assert_clean(at)
    table = at.main.dataframe[1].value
    assert len(table) == 4
    assert table["sentence true/false"].iloc[3] > table["sentence true/false"].iloc[2] > 0.5


def test_nat_tab_shows_the_mixed_answer():
    at = run_page(ENCODER_DECODER, "NAT trained for it")
    assert_clean(at)
    scores = at.main.dataframe[0].value
    assert list(scores["neither"].round(3)) == [0.0, 0.902, 0.014]
    rows = at.main.dataframe[1].value
    assert list(rows["verdict"]) == ["English", "neither", "English"]
    assert list(rows["passes"]) == [5, 1, 1]
    at.text_input(key="nat_digits").set_value("5 6 1 2").run()
    assert_clean(at)
    positions = at.main.dataframe[2].value
    assert len(positions) == 5 and (positions["p"] >= positions["p "]).all()
    at.text_input(key="nat_digits").set_value("12345").run()
    assert not at.exception and at.error


def test_entailment_page_scores_relatedness():
    at = run_page(ENTAILMENT, timeout=300)
    assert_clean(at)
    metric = next(m for m in at.main.metric if m.label.startswith("Relatedness"))
    assert 0 <= float(metric.value) <= 5
    errors = next(d.value for d in at.main.dataframe if "scorer" in d.value.columns)
    assert errors["rmse"].iloc[0] < errors["rmse"].iloc[1] < errors["rmse"].iloc[2]
