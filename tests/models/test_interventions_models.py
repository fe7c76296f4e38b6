"""`python -m txviz patch|ablate` and the exported scripts: files and numbers as the API gives them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT
from tiny_models import tiny_model

from txviz import models
from txviz.cli import main
from txviz.interventions import ablation, export, metrics, patching

CLEAN = "When Mary and John went out, John gave it to"
CORRUPT = "When Mary and John went out, Mary gave it to"


@pytest.fixture(scope="module")
def folder(tmp_path_factory, smollm2):
    """A tiny random Llama with SmolLM2's tokenizer, saved as a folder the CLI loads by path."""
    path = tmp_path_factory.mktemp("tiny-decoder")
    tiny_model("llama", len(smollm2.tokenizer), capture=False, max_position_embeddings=64).save_pretrained(
        path
    )
    smollm2.tokenizer.save_pretrained(path)
    return str(path)


def test_patch_writes_exact_and_estimated_grids(folder, tmp_path, capsys):
    out = tmp_path / "patch.npz"
    args = ["patch", "--model", folder, "--clean", CLEAN, "--corrupt", CORRUPT, "--answer", " Mary"]
    assert main([*args, "--wrong", " John", "--out", str(out), "--device", "cpu"]) == 0
    data = np.load(out)
    n = len(data["tokens"])
    assert data["residual"].shape == data["residual_attribution"].shape == (3, n)
    assert data["heads"].shape == data["heads_attribution"].shape == (2, 4) and data["ffn"].shape == (2,)
    assert data["residual"][-1, -1] == pytest.approx(1.0, abs=1e-4)  # the whole last stream is the clean one
    loaded = models.load(folder, "cpu")
    api = patching.patch(
        loaded, CLEAN, CORRUPT, metrics.make_metric(loaded, "logit_difference", " Mary", " John")
    )
    np.testing.assert_allclose(data["heads"], api.heads, atol=1e-5)
    assert "rank correlation" in capsys.readouterr().out


def test_patch_refuses_prompts_of_different_lengths_and_encoders(folder, tmp_path, capsys, minilm):
    args = ["patch", "--clean", CLEAN, "--corrupt", CORRUPT + " him", "--answer", " Mary", "--wrong", " John"]
    assert main([*args, "--model", folder, "--out", str(tmp_path / "p.npz")]) == 2
    assert "same number of tokens" in capsys.readouterr().err
    assert main([*args[:4], CORRUPT, *args[5:], "--model", "minilm", "--out", str(tmp_path / "p.npz")]) == 2
    assert "no next-token head" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_ablate_writes_every_head_and_ffn(folder, tmp_path, capsys, mode):
    out = tmp_path / "ablate.npz"
    argv = ["ablate", "--model", folder, "--text", CLEAN, "--answer", " Mary Ann", "--out", str(out)]
    assert main([*argv, "--mode", mode, "--reference", CORRUPT]) == 0
    assert "first token" in capsys.readouterr().err
    data = np.load(out)
    loaded = models.load(folder, "cpu")
    metric = metrics.make_metric(loaded, "log_probability", " Mary")
    alone = ablation.ablate(loaded, CLEAN, metric, [ablation.Component("head_out", 1, 2)], mode, CORRUPT)
    assert data["heads"].shape == (2, 4) and data["ffn"].shape == (2,)
    assert data["heads"][1, 2] == pytest.approx(alone.change, abs=1e-5)


def run_script(script: str, tmp_path) -> dict:
    path = tmp_path / "experiment.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_exported_ablation_reproduces_its_numbers_on_smollm2(smollm2, tmp_path):
    metric = metrics.make_metric(smollm2, "logit_difference", " Mary", " John")
    parts, edges = (
        [ablation.Component("head_out", 3, 4), ablation.Component("ffn", 0)],
        [ablation.Edge(10, 1, (5,))],
    )
    result = ablation.ablate(smollm2, CLEAN, metric, parts, "zero", "", edges)
    script = export.ablation_script(
        "smollm2", "cpu", CLEAN, metric, " Mary", " John", parts, "zero", "", edges
    )
    numbers = run_script(script, tmp_path)
    assert numbers == pytest.approx({"before": result.before, "after": result.after}, abs=1e-4)
    assert abs(result.change) > 1e-3


def test_an_exported_patching_reproduces_its_numbers(folder, tmp_path):
    loaded = models.load(folder, "cpu")
    metric = metrics.make_metric(loaded, "logit_difference", " Mary", " John")
    result = patching.patch(loaded, CLEAN, CORRUPT, metric)
    numbers = run_script(
        export.patching_script(folder, "cpu", CLEAN, CORRUPT, metric, " Mary", " John"), tmp_path
    )
    np.testing.assert_allclose(numbers["residual"], result.residual, atol=1e-5)
    np.testing.assert_allclose(numbers["heads_attribution"], result.estimate.heads, atol=1e-5)
