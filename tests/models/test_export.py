"""Export: standalone HTML, numbers as JSON, traces as .npz, images through kaleido and Chromium."""

import io
import json

import numpy as np
import pytest

from txviz.core.trace import AttentionTrace
from txviz.figures import export
from txviz.figures.attention import attention_heatmap

WEIGHTS = np.array([[[[0.75, 0.25], [0.5, 0.5]]]], dtype=np.float32)
TRACE = AttentionTrace(("a", "<b>"), ("a", "<b>"), WEIGHTS, "m", "self", layer_names=("l0",))


def figure():
    return attention_heatmap(WEIGHTS[0, 0], TRACE.query_tokens, TRACE.key_tokens, "t")


def test_html_is_standalone():
    html = export.figure_html(figure()).decode()
    assert "<html>" in html[:100] and len(html) > 1_000_000  # plotly.js is inside the file
    assert '<script src="http' not in html  # nothing fetched from a CDN when opened


def test_numbers_round_trip():
    data = json.loads(export.figure_numbers(figure()))
    assert data["traces"][0]["z"] == WEIGHTS[0, 0].tolist()
    assert data["axes"]["xaxis"]["ticktext"] == ["a", "&lt;b&gt;"]


def test_trace_npz_and_json_round_trip():
    npz = np.load(io.BytesIO(export.trace_npz(TRACE)))
    np.testing.assert_array_equal(npz["weights"], WEIGHTS)
    assert list(npz["query_tokens"]) == ["a", "<b>"]
    assert json.loads(export.trace_json(TRACE))["weights"] == WEIGHTS.tolist()


@pytest.mark.browser
@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("svg", b"<svg")])
def test_image_export_through_chromium(fmt, magic):
    assert export.image_export_problem() == ""
    assert export.figure_image(figure(), fmt).startswith(magic)


def test_cli_export(tmp_path, minilm):
    from txviz.cli import main

    out = tmp_path / "head.json"
    assert main(["export", "--text", "Export me", "--out", str(out), "--device", "cpu", "--layer", "1"]) == 0
    assert np.asarray(json.loads(out.read_text())["traces"][0]["z"]).shape == (4, 4)
    assert main(["export", "--text", "x", "--out", str(tmp_path / "a.gif"), "--device", "cpu"]) == 2
    assert main(["export", "--text", "x", "--out", str(out), "--device", "cpu", "--head", "12"]) == 2
