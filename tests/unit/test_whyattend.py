"""Why a head attends: the pairs sum to the model's own score; removing a part moves it by its sum."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers as tf
from tiny_models import tiny_model

from txviz.core.capture import CaptureSettings, use_capture
from txviz.core.running import run
from txviz.whyattend import composition
from txviz.whyattend.check import patch_check
from txviz.whyattend.decompose import BadEdge, decompose
from txviz.whyattend.linear import CannotDecompose

IDS = torch.tensor([[5, 17, 42, 8, 99, 23, 61, 5, 17, 30]])


def qwen3(layers: int = 3):
    """Qwen3: rotary, grouped heads and a norm on every head's query and key."""
    torch.manual_seed(0)
    config = tf.Qwen3Config(vocab_size=100, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                            num_key_value_heads=2, head_dim=8, intermediate_size=64)  # fmt: skip
    return use_capture(tf.Qwen3ForCausalLM(config).eval())


def model_of(family: str, layers: int = 3):
    if family == "qwen3":
        return qwen3(layers)
    sizes = {"n_layer": layers} if family == "gpt2" else {"num_hidden_layers": layers}
    model = tiny_model(family, **sizes)
    # random weights are small: give the stream and the scores some size so relative errors mean something
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(8.0) if p.ndim > 1 else None
    return model


def own_scores(model, layer: int) -> np.ndarray:
    """The model's pre-softmax scores of ``layer`` (H, Q, K), as its attention code hands them over."""
    recorded = run(model, CaptureSettings(record=frozenset({"scores"})), input_ids=IDS)
    return recorded.get("scores", layer)[0].numpy()


@pytest.mark.parametrize("family", ["bert", "llama", "gpt2", "qwen3"])
@pytest.mark.parametrize("layer", [0, 2])
def test_pairs_sum_to_the_models_score(family, layer):
    model = model_of(family)
    scores = own_scores(model, layer)
    for head, query, key in ((0, 8, 1), (3, 9, 9), (1, 4, 0)):
        d = decompose(model, IDS, layer, head, query, key)
        expected = scores[head, query, key]
        assert abs(d.score - expected) <= 1e-4 * max(1.0, abs(expected)), (family, head, d.score, expected)
        assert abs(d.edge_score - expected) <= 1e-4 * max(1.0, abs(expected))
        if layer:  # per head: one part per head of every earlier block
            assert sum(p.kind == "head" for p in d.parts_q) == layer * scores.shape[0]


@pytest.mark.parametrize("family", ["bert", "llama", "gpt2"])
def test_contrast_and_row_modes_match_the_models_scores(family):
    model = model_of(family)
    row = own_scores(model, 2)[1, 8]
    d = decompose(model, IDS, 2, 1, 8, 3, mode="contrast", contrast=6)
    assert d.score == pytest.approx(row[3] - row[6], rel=1e-4, abs=1e-4)
    d = decompose(model, IDS, 2, 1, 8, 3, mode="row")
    live = np.isfinite(row)
    weights = np.exp(row[live] - row[live].max())
    assert d.score == pytest.approx(row[3] - (weights / weights.sum()) @ row[live], rel=1e-4, abs=1e-4)


def test_heads_collapse_to_their_layer():
    model = model_of("gpt2")
    wide, narrow = decompose(model, IDS, 2, 1, 8, 3), decompose(model, IDS, 2, 1, 8, 3, expand=False)
    assert narrow.score == pytest.approx(wide.score, rel=1e-5)
    assert [p.name for p in narrow.parts_q] == [
        "token embedding", "position embedding", "L0 attention", "L0 MLP", "L1 attention", "L1 MLP", "biases"
    ]  # fmt: skip


@pytest.mark.parametrize("family", ["bert", "llama", "gpt2", "qwen3"])
def test_a_one_layer_models_head_has_only_embedding_parts(family):
    d = decompose(model_of(family, layers=1), IDS, 0, 2, 7, 2)
    assert {p.kind for p in d.parts_q} <= {"token", "position", "segment", "bias"}
    assert {p.kind for p in d.parts_k} == {p.kind for p in d.parts_q}


def test_removing_a_part_with_the_norm_frozen_moves_the_score_by_its_sum():
    """Llama by hand: the stream at the query less one part, through RMSNorm with the run's scale, the
    model's q_proj and its rotary; the key from the model's own modules."""
    model = model_of("llama")
    layer, head, query, key = 2, 3, 8, 2
    d = decompose(model, IDS, layer, head, query, key)
    recorded = run(model, CaptureSettings(stages=frozenset({"resid"})), input_ids=IDS)
    x = recorded.get("resid", layer - 1)[0]
    block = model.model.layers[layer]
    norm = block.input_layernorm
    attention = block.self_attn
    d_head = attention.head_dim
    cos, sin = model.model.rotary_emb(x[None], torch.arange(len(x))[None])
    rope = tf.models.llama.modeling_llama.apply_rotary_pos_emb
    with torch.no_grad():
        k = attention.k_proj(norm(x[None])).view(1, -1, 2, d_head).transpose(1, 2)
        for part in (0, 5, 9):
            for side in ("query", "key"):
                removed = x.clone()
                at = query if side == "query" else key
                removed[at] -= (d.stream_q if side == "query" else d.stream_k)[part]
                rms = x.pow(2).mean(-1, keepdim=True).add(norm.variance_epsilon).sqrt()  # frozen: the run's
                y = norm.weight * removed / rms
                q2 = attention.q_proj(y[None]).view(1, -1, 4, d_head).transpose(1, 2)
                k2 = attention.k_proj(y[None]).view(1, -1, 2, d_head).transpose(1, 2)
                q_base = attention.q_proj(norm(x[None])).view(1, -1, 4, d_head).transpose(1, 2)
                qr, kr = rope(q2 if side == "query" else q_base, k2 if side == "key" else k, cos, sin)
                score = float(qr[0, head, query] @ kr[0, head // 2, key]) * attention.scaling
                sums = d.query_sums if side == "query" else d.key_sums
                assert score - d.edge_score == pytest.approx(-sums[part], rel=1e-4, abs=1e-5)


def test_patching_check_is_exact_without_a_norm_before_attention():
    """BERT's attention reads the stream with no norm: predicted and measured agree; Llama's differ by the norm."""
    model = model_of("bert")
    d = decompose(model, IDS, 2, 1, 8, 3)
    for side in ("query", "key"):
        found = patch_check(model, IDS, d, side)
        assert found.measured == pytest.approx(found.predicted, rel=1e-3, abs=1e-4)
    llama = model_of("llama")
    found = patch_check(llama, IDS, decompose(llama, IDS, 2, 1, 8, 3), "query")
    assert found.scale_after != pytest.approx(found.scale_before)


def test_composition_scores_equal_a_direct_computation():
    model = model_of("llama")
    layer, head = 2, 3
    found = composition.scores(model, layer, head)
    attention = [b.self_attn for b in model.model.layers]
    gain = [b.input_layernorm.weight.detach() for b in model.model.layers]
    d_head = attention[0].head_dim

    def cols(linear, index, g):
        return g[:, None] * linear.weight.detach()[index * d_head : (index + 1) * d_head].T

    later = attention[layer]
    qk = cols(later.q_proj, head, gain[layer]) @ cols(later.k_proj, head // 2, gain[layer]).T
    ov_later = (
        cols(later.v_proj, head // 2, gain[layer])
        @ later.o_proj.weight.detach()[:, head * d_head :][:, :d_head].T
    )
    for earlier in range(layer):
        for h in range(4):
            a = attention[earlier]
            ov = (
                cols(a.v_proj, h // 2, gain[earlier])
                @ a.o_proj.weight.detach()[:, h * d_head : (h + 1) * d_head].T
            )
            for mode, right in (("Q", qk), ("K", qk.T), ("V", ov_later)):
                direct = torch.linalg.norm(ov @ right) / (torch.linalg.norm(ov) * torch.linalg.norm(right))
                assert found[mode][earlier, h] == pytest.approx(float(direct), rel=1e-4)
    assert np.isnan(found["Q"][layer:]).all()


def test_bad_edges_are_refused_with_a_reason():
    model = model_of("llama")
    with pytest.raises(BadEdge, match="causal mask"):
        decompose(model, IDS, 1, 0, 3, 5)
    with pytest.raises(BadEdge, match="beyond the text"):
        decompose(model, IDS, 1, 0, 12, 1)
    with pytest.raises(CannotDecompose, match="float32"):
        decompose(model.to(torch.bfloat16), IDS, 1, 0, 3, 1)
    bart = tiny_model("bart")
    with pytest.raises(CannotDecompose, match="cross-attention"):
        decompose(bart, IDS, 1, 0, 3, 1)


def test_a_clicked_cell_is_the_picked_edge():
    from txviz.whyattend.figures import picked_edge

    assert picked_edge({"edge": [{"query": 5, "key": 2}]}) == (5, 2)
    assert picked_edge({"edge": {"query": [4], "key": [1]}}) == (4, 1)
    assert picked_edge({}) is None and picked_edge(None) is None


def test_the_page_opens_on_an_edge_between_words_not_a_sink():
    """Why Attend's opening edge: the pronoun's strongest word, not [SEP] -> [CLS], punctuation, the
    first position or itself, even where those carry more weight."""
    from txviz.whyattend.figures import default_edge

    tokens = ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "it", "was", "tired", ".", "[SEP]"]
    n = len(tokens)
    weights = np.full((n, n), 0.01)
    weights[:, 0] = weights[:, -1] = weights[:, 10] = 0.3  # the sinks and the full stop
    weights[7, 7], weights[7, 2], weights[7, 9] = 0.25, 0.2, 0.1
    query, key = default_edge(weights, tokens, {"[CLS]", "[SEP]"})
    assert (tokens[query], tokens[key]) == ("it", "animal")
    # a decoder's text without a pronoun: its last word, and never the first position (its sink)
    tokens = ["The", "Ġcat", "Ġsat", "Ġon", "Ġthe", "Ġmat", "."]
    weights = np.tril(np.full((7, 7), 0.05))
    weights[:, 0], weights[5, 2] = 0.6, 0.2
    assert default_edge(weights, tokens, set()) == (5, 2)
    assert default_edge(np.ones((2, 2)) / 2, ["[CLS]", "[SEP]"], {"[CLS]", "[SEP]"}) == (1, 0)


def test_the_parts_matrix_shows_whole_names_one_per_row():
    """Vega cuts axis labels past 180 px and hides a label that overlaps its neighbour."""
    from txviz.whyattend import figures
    from txviz.whyattend.decompose import Decomposition
    from txviz.whyattend.stream import Part

    parts = (Part("token"), Part("position"), Part("segment"), Part("bias"))
    pairs = np.arange(16, dtype=np.float32).reshape(4, 4)
    found = Decomposition(
        3, 1, 7, 2, "edge", None, parts, parts, pairs, float(pairs.sum()), 0.0, None, None, None
    )
    spec = figures.pairs_heatmap(found).to_dict()
    for channel in ("x", "y"):
        assert spec["encoding"][channel]["axis"]["labelLimit"] == 0, channel
    assert spec["height"]["step"] >= 1.25 * 11 + 4  # Vega's 11 px labels, each with its own row


def test_a_model_placed_by_discovery_is_refused_with_the_reason(monkeypatch):
    from txviz.core import model_map

    monkeypatch.delitem(model_map.BY_MODEL_TYPE, "qwen3")
    with pytest.raises(CannotDecompose, match="discovery"):
        decompose(qwen3(2), IDS, 1, 0, 3, 1)


def test_the_command_writes_the_decomposition(tmp_path, monkeypatch, capsys):
    from tiny_models import word_tokenizer

    from txviz import cli, models
    from txviz.core.loaded import LoadedModel

    tokenizer = word_tokenizer(["the", "cat", "sat", "on", "mat"])
    tiny = LoadedModel("tiny", "decoder", model_of("llama"), tokenizer, None, "cpu")
    monkeypatch.setattr(models, "load", lambda *args, **kwargs: tiny)
    out = tmp_path / "x.npz"
    edge = [
        "--model",
        "tiny",
        "--text",
        "the cat sat on the mat",
        "--layer",
        "2",
        "--head",
        "1",
        "--out",
        str(out),
    ]
    assert cli.main(["why-attend", *edge, "--query", "5", "--key", "2"]) == 0
    saved = np.load(out)
    assert saved["pairs"].shape == (len(saved["parts_q"]), len(saved["parts_k"]))
    assert saved["pairs"].sum() == pytest.approx(float(saved["score"]), rel=1e-4, abs=1e-5)
    assert "L0H0" in saved["parts_q"]
    assert cli.main(["why-attend", *edge, "--query", "2", "--key", "5"]) == 2
    assert "causal mask" in capsys.readouterr().err
