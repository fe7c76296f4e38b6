"""Head detectors on the real models: induction reproduces across seeds, the CLI, bad input."""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import spearmanr

from txviz.cli import main
from txviz.heads import corpus, runs
from txviz.heads.corpus import Corpus, CorpusError


def test_smollm2_induction_scores_reproduce_on_a_second_seed(smollm2):
    scores = [
        runs.score_heads(smollm2, Corpus(()), runs.RepeatSettings(n=3, length=20, seed=seed)).scores
        for seed in (0, 1)
    ]
    a, b = scores[0]["induction"].ravel(), scores[1]["induction"].ravel()
    assert spearmanr(a, b).statistic > 0.9
    assert max(a.max(), b.max()) > 0.8  # SmolLM2 has real induction heads (L18H6), not noise
    assert np.argmax(a) == np.argmax(b)
    assert np.isnan(scores[0]["previous_token"]).all()  # no corpus texts: text detectors unmeasured


def test_repeated_sequences_tokenise_back_to_their_words(smollm2, minilm):
    for loaded in (smollm2, minilm):
        (text,) = corpus.repeated_sequences(loaded, 1, 6, seed=3)
        prefix = corpus.sequence_prefix(loaded)
        words = text.removeprefix(prefix).split()
        assert words[:6] == words[6:] and len(set(words)) == 6
        ids = loaded.tokenizer(text, add_special_tokens=False)["input_ids"][1 if prefix else 0 :]
        assert len(ids) == 12 and ids[:6] == ids[6:]
    assert corpus.sequence_prefix(smollm2) == "<|endoftext|>" and corpus.sequence_prefix(minilm) == ""
    assert corpus.repeated_sequences(minilm, 2, 6, seed=3) == corpus.repeated_sequences(minilm, 2, 6, seed=3)


def test_minilm_scores_are_in_range_and_one_token_texts_are_refused(minilm):
    result = runs.score_heads(
        minilm, Corpus(("The cat sat on the mat.", "Hello")), runs.RepeatSettings(n=1, length=6)
    )
    assert result.shape == (6, 12) and len(result.texts) == 3
    for name, values in result.scores.items():
        assert values.shape == (6, 12), name
        assert np.nanmin(values) >= 0 and np.nanmax(values) <= 1, name
    assert np.all(result.best_text["induction"] == 2)  # only the repeated sequence measures it
    assert result.scores["previous_token"].max() > 0.9  # MiniLM has a near-pure previous-token head


def test_single_token_texts_everywhere_are_a_clear_error(smollm2):
    with pytest.raises(CorpusError, match="single token"):
        runs.score_heads(smollm2, Corpus(("Hello",)), None)


def test_a_model_with_thousands_of_heads_is_refused():
    huge = SimpleNamespace(name="huge", n_layers=96, n_heads=96)
    with pytest.raises(CorpusError, match="9,216 heads"):
        runs.check_size(huge)


def test_cli_writes_one_array_per_detector(tmp_path, capsys, minilm):
    out = tmp_path / "heads.npz"
    argv = [
        "heads",
        "--model",
        "minilm",
        "--out",
        str(out),
        "--device",
        "cpu",
        "--repeats",
        "1",
        "--length",
        "6",
    ]
    corpus_file = tmp_path / "c.txt"
    corpus_file.write_text("One short text.\n\nAnd a second, shorter one.")
    assert main([*argv, "--corpus", str(corpus_file)]) == 0
    data = np.load(out)
    for name in ("previous_token", "first_token", "duplicate_token", "induction", "sep", "broad"):
        assert data[name].shape == (6, 12) and data[name].dtype == np.float32
    assert "top induction" in capsys.readouterr().out
    assert main([*argv, "--corpus", str(tmp_path / "missing.txt")]) == 2
    assert "error" in capsys.readouterr().err
