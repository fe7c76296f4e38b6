"""`python -m txviz`: trace export, the model list, bench and train dispatch."""

import json

import numpy as np

from txviz.cli import main


def test_trace_to_json_and_npz(tmp_path, capsys, minilm):
    out = tmp_path / "t.json"
    assert (
        main(
            [
                "trace",
                "--model",
                "minilm",
                "--text",
                "Hello world",
                "--out",
                str(out),
                "--format",
                "json",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    data = json.loads(out.read_text())
    assert data["query_tokens"] == ["[CLS]", "hello", "world", "[SEP]"]
    assert np.asarray(data["weights"]).shape == (6, 12, 4, 4)
    npz = tmp_path / "t.npz"
    assert (
        main(["trace", "--model", "minilm", "--text", "Hello world", "--out", str(npz), "--device", "cpu"])
        == 0
    )
    np.testing.assert_allclose(np.load(npz)["weights"].sum(-1), 1.0, atol=1e-5)


def test_trace_with_bad_input_exits_2(capsys):
    assert main(["trace", "--model", "no-such-model", "--text", "hi"]) == 2
    assert main(["trace", "--model", "minilm", "--text", "  ", "--device", "cpu"]) == 2
    assert "empty" in capsys.readouterr().err


def test_models_and_unknown_bench(capsys):
    assert main(["models"]) == 0
    assert "minilm" in capsys.readouterr().out
    assert main(["bench", "no-such-bench"]) == 2
    assert "unknown" in capsys.readouterr().err
