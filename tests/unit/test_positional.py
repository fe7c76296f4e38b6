"""Positional encodings checked against their formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import plotly_array

from txviz.positional import encodings as pe


def test_sinusoid_matches_its_equation_entry_by_entry():
    n, d, c = 60, 32, 10000.0
    p = pe.sinusoidal_encoding(n, d, c)
    assert p.shape == (60, 32)
    for i in (0, 1, 7, 59):
        for j in range(d // 2):
            angle = i / c ** (2 * j / d)
            assert p[i, 2 * j] == pytest.approx(math.sin(angle), abs=1e-12)
            assert p[i, 2 * j + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoid_textbook_columns_six_to_nine():
    # Column 6 is sin(i / 10000^(6/32)), column 7 its cosine; column 8 and 9 the next pair.
    p = pe.sinusoidal_encoding(60, 32)
    i = np.arange(60)
    np.testing.assert_allclose(p[:, 6], np.sin(i / 10000 ** (6 / 32)))
    np.testing.assert_allclose(p[:, 7], np.cos(i / 10000 ** (6 / 32)))
    np.testing.assert_allclose(p[:, 9], np.cos(i / 10000 ** (8 / 32)))
    assert p[0, 6] == 0.0 and p[0, 7] == 1.0


def test_odd_d_keeps_the_formula_and_the_rotation_refuses_clearly():
    p = pe.sinusoidal_encoding(5, 5, 100.0)
    assert p.shape == (5, 5)
    np.testing.assert_allclose(p[:, 4], np.sin(np.arange(5) / 100 ** (4 / 5)))
    with pytest.raises(pe.PositionalError, match="even d"):
        pe.rotation_matrix(1, 5)


@pytest.mark.parametrize(
    ("n", "d", "base", "message"),
    [
        (0, 32, 1e4, "at least 1"),
        (10, 0, 1e4, "at least 1"),
        (10, 8, 0.0, "positive"),
        (10, 8, float("nan"), "positive"),
        (10**6, 8, 1e4, "at most"),
    ],
)
def test_bad_sinusoid_input_gives_a_clear_message(n, d, base, message):
    with pytest.raises(pe.PositionalError, match=message):
        pe.sinusoidal_encoding(n, d, base)


def test_binary_table_counts_000_to_111():
    table = pe.binary_encoding(8, 3)
    assert table.shape == (8, 3)
    assert set(np.unique(table)) == {0, 1}
    np.testing.assert_array_equal(table @ (2 ** np.arange(3)), np.arange(8))
    np.testing.assert_array_equal(table[:, 0], [0, 1, 0, 1, 0, 1, 0, 1])  # fastest bit
    np.testing.assert_array_equal(table[:, 2], [0, 0, 0, 0, 1, 1, 1, 1])
    assert pe.binary_labels(8, 3) == [
        "000",
        "001",
        "010",
        "011",
        "100",
        "101",
        "110",
        "111",
    ]
    with pytest.raises(pe.PositionalError, match="only 8 positions"):
        pe.binary_encoding(9, 3)


@pytest.mark.parametrize("phi", [1, 5, 17, -3])
def test_rotation_moves_every_position_by_phi(phi):
    n, d = 60, 32
    p = pe.sinusoidal_encoding(n + 20, d)
    r = pe.rotation_matrix(phi, d)
    np.testing.assert_allclose(r @ r.T, np.eye(d), atol=1e-12)  # a rotation
    for t in range(max(0, -phi), n):
        assert np.abs(r @ p[t] - p[t + phi]).max() < 1e-6


def test_rotation_block_is_the_textbook_two_by_two():
    d, phi = 4, 3
    r = pe.rotation_matrix(phi, d, 100.0)
    w1 = 1 / 100 ** (2 / 4)
    np.testing.assert_allclose(
        r[2:, 2:],
        [
            [math.cos(phi * w1), math.sin(phi * w1)],
            [-math.sin(phi * w1), math.cos(phi * w1)],
        ],
    )
    assert np.all(r[:2, 2:] == 0)


def test_shift_check_reports_a_tiny_difference():
    check = pe.shift_check(10, 7, 32)
    assert check.max_abs_difference < 1e-6
    np.testing.assert_allclose(check.direct, pe.sinusoidal_encoding(18, 32)[17])
    with pytest.raises(pe.PositionalError, match="negative"):
        pe.shift_check(2, -5, 32)


def test_sinusoid_dot_product_depends_only_on_distance():
    d = 32
    p = pe.sinusoidal_encoding(40, d)
    sim = pe.dot_similarity(p)
    omega = pe.frequencies(d)
    for i, k in [(0, 0), (3, 10), (20, 5), (39, 0)]:
        assert sim[i, k] == pytest.approx(np.cos((i - k) * omega).sum(), abs=1e-9)
    assert np.allclose(np.diag(sim), d / 2)
    by_offset = pe.similarity_by_offset(sim)
    assert by_offset[0] == pytest.approx(16.0) and by_offset[1] < by_offset[0]


def test_cosine_similarity_has_unit_diagonal():
    sim = pe.cosine_similarity(np.array([[3.0, 4.0], [0.0, 2.0], [0.0, 0.0]]))
    np.testing.assert_allclose(np.diag(sim)[:2], [1, 1])
    assert sim[0, 1] == pytest.approx(0.8)
    assert sim[2, 2] == 0.0  # a zero vector is similar to nothing, not NaN


def test_principal_components_recover_a_line():
    t = np.linspace(-1, 1, 50)
    points = np.stack([t, 2 * t, np.zeros_like(t)], axis=1)
    pcs = pe.principal_components(points, 2)
    assert pcs.scores.shape == (50, 2)
    assert pcs.explained_ratio[0] == pytest.approx(1.0)
    np.testing.assert_allclose(np.abs(pcs.scores[:, 0]), np.abs(t) * math.sqrt(5), atol=1e-12)


def test_rope_frequencies_match_llama_formula_and_transformers():
    torch = pytest.importorskip("torch")
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    config = LlamaConfig(hidden_size=576, num_attention_heads=9, head_dim=64, rope_theta=100000.0)
    spec = pe.rope_spec(config)
    assert spec.theta == 100000.0 and spec.head_dim == 64
    np.testing.assert_allclose(spec.inv_freq[:3], [1.0, 100000 ** (-2 / 64), 100000 ** (-4 / 64)])

    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 1, 5, 64))
    positions = np.arange(5)
    angles = positions[:, None] * spec.inv_freq[None, :]
    emb = np.concatenate([angles, angles], axis=-1)[None]
    cos, sin = torch.tensor(np.cos(emb)), torch.tensor(np.sin(emb))
    expected, _ = apply_rotary_pos_emb(torch.tensor(x), torch.tensor(x), cos, sin)
    np.testing.assert_allclose(pe.apply_rope(x, positions, spec.inv_freq), expected.numpy(), atol=1e-12)


def test_rope_score_depends_only_on_offset():
    rng = np.random.default_rng(1)
    inv_freq = pe.rope_frequencies(64, 100000.0)
    check = pe.rope_offset_check(rng.normal(size=64), rng.normal(size=64), 30, inv_freq)
    assert check.scores.shape == (30, 30)
    assert check.max_diagonal_spread < 1e-9
    assert check.scores[7, 3] == pytest.approx(check.by_offset[4])
    assert np.ptp(check.by_offset) > 1e-3  # but it does change with the offset
    with pytest.raises(pe.PositionalError, match="even head dimension"):
        pe.rope_frequencies(63, 10000.0)


def test_added_similarity_has_cross_terms_concatenated_does_not():
    rng = np.random.default_rng(2)
    x, p = rng.normal(size=(6, 8)), pe.sinusoidal_encoding(6, 8)
    parts = pe.added_vs_concatenated(x, p)
    np.testing.assert_allclose(
        parts.added @ parts.added.T,
        parts.content + parts.position + parts.cross,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        parts.concatenated @ parts.concatenated.T,
        parts.content + parts.position,
        atol=1e-12,
    )
    assert np.abs(parts.cross).max() > 0.1
    with pytest.raises(pe.PositionalError, match="same shape"):
        pe.added_vs_concatenated(x, p[:, :4])


def test_learned_position_embeddings_are_the_table_the_model_map_names():
    pytest.importorskip("torch")
    from tiny_models import tiny_model

    bert = tiny_model("bert")
    table = pe.learned_position_embeddings(bert)
    assert table.dtype == np.float32
    np.testing.assert_array_equal(table, bert.embeddings.position_embeddings.weight.detach().numpy())
    # GPT-2's table (wpe) is named by the map too: a learned-position view it did not have before
    gpt2 = tiny_model("gpt2")
    np.testing.assert_array_equal(
        pe.learned_position_embeddings(gpt2), gpt2.transformer.wpe.weight.detach().numpy()
    )
    for refused in (tiny_model("llama"), __import__("torch").nn.Linear(2, 2)):
        with pytest.raises(pe.PositionalError, match="rotary"):
            pe.learned_position_embeddings(refused)


def test_rotary_frequencies_are_the_buffer_the_model_map_names():
    pytest.importorskip("torch")
    from tiny_models import tiny_model

    llama = tiny_model("llama")
    np.testing.assert_array_equal(pe.model_inv_freq(llama), llama.model.rotary_emb.inv_freq.double().numpy())
    assert pe.model_inv_freq(tiny_model("bert")) is None


def test_figures_carry_the_numbers():
    from txviz.positional import figures as figs

    p = pe.sinusoidal_encoding(60, 32)
    heat = figs.encoding_heatmap(p, "P").to_dict()
    np.testing.assert_allclose(plotly_array(heat["data"][0]["z"]), p)
    assert heat["layout"]["yaxis"]["title"]["text"] == "position i"

    curves = figs.basis_curves(p, [6, 7, 8, 9], "cols").to_dict()["data"]
    assert [trace["name"] for trace in curves] == [
        "col 6 (sin)",
        "col 7 (cos)",
        "col 8 (sin)",
        "col 9 (cos)",
    ]
    np.testing.assert_allclose(plotly_array(curves[1]["y"]), p[:, 7])

    binary = figs.binary_table_figure(pe.binary_encoding(), pe.binary_labels()).to_dict()
    assert binary["layout"]["yaxis"]["ticktext"][5] == "5 = 101"

    shift = figs.shift_figure(pe.shift_check(3, 4, 32)).to_dict()["data"]
    np.testing.assert_allclose(plotly_array(shift[0]["y"]), p[7])

    check = pe.rope_offset_check(np.ones(8), np.ones(8), 6, pe.rope_frequencies(8, 100.0))
    rope = figs.rope_offset_figure(check).to_dict()
    np.testing.assert_allclose(plotly_array(rope["data"][0]["z"]), check.scores)

    parts = pe.added_vs_concatenated(np.eye(3), pe.sinusoidal_encoding(3, 3))
    split = figs.added_vs_concatenated_figure(parts, ["the", "cat", "the"]).to_dict()
    np.testing.assert_allclose(plotly_array(split["data"][2]["z"]), parts.cross)
    assert split["layout"]["xaxis"]["ticktext"] == ["the", "cat", "the"]

    pcs = figs.pca_figure(pe.principal_components(p), "PCA").to_dict()
    assert len(plotly_array(pcs["data"][0]["x"])) == 60


def test_summary_and_positions_like():
    p = pe.sinusoidal_encoding(30, 16)
    summary = pe.summarize("sin", p)
    np.testing.assert_allclose(np.diag(summary.cosine), 1.0)
    assert summary.by_offset[0] == pytest.approx(1.0)
    assert summary.components.scores.shape == (30, 2)
    from txviz.positional import figures as figs

    assert len(figs.summary_figures(summary)) == 3
    x = np.zeros((5, 16))
    np.testing.assert_array_equal(pe.positions_like(pe.POSITION_SOURCES[1], x), p[:5])


def test_seeded_rope_check_and_mean_norms():
    spec = pe.RopeSpec(10000.0, 8, pe.rope_frequencies(8, 10000.0))
    check = pe.seeded_rope_offset_check(spec, 12, seed=5)
    assert check.max_diagonal_spread < 1e-9
    np.testing.assert_array_equal(check.scores, pe.seeded_rope_offset_check(spec, 12, seed=5).scores)
    parts = pe.added_vs_concatenated(np.full((2, 4), 0.5), np.array([[3.0, 4, 0, 0], [0, 0, 3, 4]]))
    assert parts.mean_norms == pytest.approx((1.0, 5.0))


def test_heatmap_colours_clip_outliers_but_keep_the_data():
    from txviz.positional import figures as figs

    matrix = np.full((20, 10), 0.1)
    matrix[0, 0] = 50.0
    trace = figs.encoding_heatmap(matrix, "outlier").to_dict()["data"][0]
    assert trace["zmax"] == pytest.approx(0.1) and trace["zmin"] == pytest.approx(-0.1)
    assert plotly_array(trace["z"])[0, 0] == 50.0
    plain = figs.encoding_heatmap(pe.sinusoidal_encoding(60, 32), "P").to_dict()["data"][0]
    assert plain["zmax"] == pytest.approx(1.0)


def _svd_pca(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores and variance shares by hand: SVD of the centred rows."""
    centred = matrix - matrix.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    k = min(k, len(s))
    return u[:, :k] * s[:k], s[:k] ** 2 / (s**2).sum()


@pytest.mark.parametrize("shape", [(50, 8), (6, 40), (3, 2), (2, 5), (30, 1)])
def test_principal_components_equal_the_svd_of_the_centred_rows_up_to_sign(shape):
    from txviz.heads import qkspace

    matrix = np.random.default_rng(sum(shape)).normal(size=shape) * np.linspace(3, 0.5, shape[1])
    scores, ratio = _svd_pca(matrix, 2)
    pcs = pe.principal_components(matrix, 2)
    signs = np.sign((pcs.scores * scores).sum(axis=0))  # each axis may come out flipped
    assert set(signs) <= {-1.0, 1.0}
    np.testing.assert_allclose(pcs.scores * signs, scores, atol=1e-10)
    np.testing.assert_allclose(pcs.explained_ratio, ratio, atol=1e-12)
    coords, kept = qkspace.pca(matrix)  # always two columns, padded with zeros
    assert coords.shape == (shape[0], 2) and kept == pytest.approx(ratio.sum())
    np.testing.assert_allclose(np.abs(coords[:, : scores.shape[1]]), np.abs(scores), atol=1e-10)
    np.testing.assert_array_equal(coords[:, scores.shape[1] :], 0.0)


def test_principal_components_of_points_that_do_not_vary():
    from txviz.heads import qkspace

    same = np.tile([1.0, 2.0, 3.0], (4, 1))
    pcs = pe.principal_components(same)
    np.testing.assert_array_equal(pcs.scores, np.zeros((4, 2)))
    np.testing.assert_array_equal(pcs.explained_ratio, [0.0, 0.0])
    coords, kept = qkspace.pca(same)
    np.testing.assert_array_equal(coords, np.zeros((4, 2)))
    assert kept == 1.0
    assert qkspace.pca(np.ones((1, 4)))[0].shape == (1, 2)  # a single point


@pytest.mark.parametrize("bits", [3, 5])
def test_binary_table_cells_read_as_their_row_labels(bits):
    from txviz.positional import figures as figs

    labels = pe.binary_labels(2**bits, bits)
    heatmap = figs.binary_table_figure(pe.binary_encoding(2**bits, bits), labels).to_dict()["data"][0]
    cells = np.asarray(plotly_array(heatmap["z"])).reshape(2**bits, bits)
    assert ["".join(str(int(b)) for b in row) for row in cells] == labels  # 6 = 110 reads 1 1 0
    ticktext = figs.binary_table_figure(pe.binary_encoding(8, 3), pe.binary_labels()).to_dict()
    assert ticktext["layout"]["xaxis"]["ticktext"] == ["bit 2 (4)", "bit 1 (2)", "bit 0 (1)"]


def test_a_real_shift_difference_is_still_called_a_difference():
    from txviz.positional import figures as figs

    check = pe.shift_check(3, 4, 32)
    wrong = pe.ShiftCheck(3, 4, check.direct, check.rotated + 0.1, 0.1)
    assert check.only_rounding and not wrong.only_rounding
    assert figs.shift_figure(wrong).to_dict()["data"][2]["name"] == "difference"
