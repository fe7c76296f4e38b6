"""`bench scale` on a tiny config of the same family: built as a folder, measured in its own process."""

import pytest

from txviz.bench import _all, scale
from txviz.families import zoo

pytestmark = pytest.mark.families
TINY = dict(
    hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    intermediate_size=64, vocab_size=zoo.VOCAB, max_position_embeddings=128,
)  # fmt: skip


def test_the_public_configs_are_the_published_sizes():
    import transformers as tf

    config_class, _, sizes = scale.CONFIGS["qwen2.5-0.5b-like"]
    qwen = getattr(tf, config_class)(**sizes)
    assert (qwen.hidden_size, qwen.num_hidden_layers, qwen.num_attention_heads) == (896, 24, 14)
    assert (qwen.num_key_value_heads, qwen.intermediate_size, qwen.vocab_size) == (2, 4864, 151936)
    assert qwen.tie_word_embeddings and qwen.rope_parameters["rope_theta"] == 1e6


def test_a_tiny_qwen2_is_built_loaded_as_a_folder_and_measured_apart(tmp_path):
    folder = scale.build_folder("qwen2.5-0.5b-like", tmp_path / "tiny", zoo.tokenizer(), TINY)
    results = [
        scale.measure_apart(folder, dtype, threads=1, n_tokens=64) for dtype in ("float32", "bfloat16")
    ]
    for r in results:
        n = r["tokens"]  # the word-level tokenizer reads SmolLM2's text in fewer tokens
        assert n > 32 and r["threads"] == 1 and r["check_gap"] <= 1e-4
        assert r["trace_mb"] == 2 * 4 * n * n * 4 / 2**20  # layers x heads x T^2 x float32
        assert min(r["plain"] + r["trace"]) > 0 and r["peak_load"] >= 0.99 * r["rss_loaded"] > 0
    lines = scale.table("tiny", results)
    found = _all.ratios("scale", "\n".join(lines))
    assert {r.what for r in found} == {
        f"tiny {dtype}: {column}"
        for dtype in ("float32", "bfloat16")
        for column in ("first trace / forward ratio (CPU)", "trace / forward ratio (CPU)")
    }
