"""The positional encoding page's tabs: the sinusoid and its binary ancestor, shifts as rotations, MiniLM's
learned and SmolLM2's rotary positions, adding against concatenating, relative positions and FLOATER."""

from dataclasses import dataclass

import numpy as np
import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.positional import concat, floater, lookup, relative
from txviz.positional import encodings as pe
from txviz.positional import figures as figs
from txviz.selfattention import figures as sa_figs


@dataclass(frozen=True)
class Settings:
    """The sidebar's sinusoid and its table P."""

    n: int
    d: int
    base: int
    encoding: np.ndarray  # (n, d)


def sidebar() -> Settings:
    """The sidebar's sinusoid widgets, and its table (a warning above the tabs when d is odd)."""
    with st.sidebar:
        st.subheader("Sinusoid")
        n = st.slider("Positions n", 1, 200, ui.link_value("n", 60, range(1, 201)), key="n")
        d = st.slider("Dimensions d", 1, 128, ui.link_value("d", 32, range(1, 129)), key="d")
        bases = [10, 100, 1000, 10000, 100000, 1000000]
        base = st.select_slider("Base C", bases, value=ui.link_value("base", 10000, bases), key="base")

    with ui.user_errors():
        encoding = pe.sinusoidal_encoding(n, d, base)  # (n, d)
    if d % 2:
        st.warning(pe.ODD_D_NOTE)
    return Settings(n, d, base, encoding)


def short_text(key: str) -> tuple:
    """MiniLM and a short text of the reader's: the two tabs that take its word embeddings."""
    loaded = ui.load_model("minilm", kinds=("encoder",))
    return loaded, ui.text_input("Short text", "the cat sat on the cat", key=key, height=68)


def sinusoids(settings: Settings) -> None:
    """The sinusoidal table P and some of its columns."""
    n, d, base, encoding = settings.n, settings.d, settings.base, settings.encoding
    st.latex(r"p_{i,2j} = \sin\frac{i}{C^{2j/d}}, \qquad p_{i,2j+1} = \cos\frac{i}{C^{2j/d}}")
    st.latex(pe.BOOK_D4_ROW)
    st.caption(pe.book_rows_note(d, base))
    st.caption(pe.LAYOUT_NOTE)
    ui.show_figure(figs.encoding_heatmap(encoding, f"P for n = {n}, d = {d}, C = {base:,}"), key="P")
    teaching.notice(
        "each column pair is the sine and cosine of one frequency: the left columns turn fast, the right "
        "ones slowly, so every row (a position) gets its own pattern."
    )
    default = [j for j in range(6, 10) if j < d] or [0]
    columns = st.multiselect("Columns to draw", list(range(d)), default=default, key="columns")
    ui.show_figure(figs.basis_curves(encoding, columns, "Columns of P over the positions"), key="curves")


def binary(settings: Settings) -> None:
    """Positions in binary: the sinusoid's discrete ancestor."""
    bits = st.slider("Bits", 1, 6, ui.link_value("bits", 3, range(1, 7)), key="bits")
    table = pe.binary_encoding(2**bits, bits)
    ui.show_figure(
        figs.binary_table_figure(table, pe.binary_labels(2**bits, bits), ui.presenting()), key="binary"
    )
    st.caption(
        "Bit 0 flips at every position, bit 1 every two, bit 2 every four: lower bits are higher "
        "frequencies. The sinusoid is the continuous version: column pair j turns at 1 / C^(2j/d) "
        "radians per position, fastest at j = 0, and its values are smooth floats instead of 0 and 1."
    )


def shift(settings: Settings) -> None:
    """A shift by φ is one rotation of p_t, whatever t."""
    n, d, base = settings.n, settings.d, settings.base
    cols = st.columns(2)
    t_max = max(n - 1, 1)
    t = cols[0].slider("Position t", 0, t_max, ui.link_value("t", min(10, n - 1), range(t_max + 1)), key="t")
    phi = cols[1].slider("Offset φ", -t, 100, ui.link_value("phi", 5, range(-t, 101)), key="phi")
    with ui.user_errors():
        check = pe.shift_check(t, phi, d, base)
    st.latex(
        r"p_{t+\phi} = R(\phi)\, p_t,\quad R_j(\phi) = \begin{pmatrix}\cos\phi\omega_j & \sin\phi\omega_j\\ -\sin\phi\omega_j & \cos\phi\omega_j\end{pmatrix}"
    )
    st.metric(
        "Largest |R(φ) p_t − p_(t+φ)|",
        f"{check.max_abs_difference:.2e}",
        help="Values near 1e-16 are float64 rounding (about 16 significant digits), not a difference: "
        "the rotation is exact.",
    )
    cols = st.columns(2)
    with cols[0]:
        ui.show_figure(figs.shift_figure(check), key="shift")
    with cols[1]:
        ui.show_figure(figs.rotation_figure(pe.rotation_matrix(phi, d, base), phi), key="rotation")
    st.caption(
        "R(φ) depends on φ only, not on t: any fixed offset is one linear map, which attention can learn."
    )


def position_similarity(settings: Settings) -> None:
    """How alike two positions are, by their distance."""
    base, encoding = settings.base, settings.encoding
    measures = ["dot product", "cosine"]
    measure = widgets.linked_radio("Measure", measures, "measure")
    similarity = pe.dot_similarity(encoding) if measure == "dot product" else pe.cosine_similarity(encoding)
    cols = st.columns(2)
    with cols[0]:
        ui.show_figure(
            figs.similarity_heatmap(similarity, f"p_i · p_k ({measure})", ui.presenting()),
            key="similarity",
        )
    with cols[1]:
        curve = {f"sinusoid C = {base:,}": pe.similarity_by_offset(similarity)}
        ui.show_figure(figs.offset_curves(curve, "Similarity by distance", measure), key="by_offset")
    st.caption("For even d, p_i · p_k = Σ_j cos((i − k) ω_j): it depends on the distance i − k only.")


def learned_positions(settings: Settings) -> None:
    """MiniLM's learned position embeddings beside a sinusoid of the same shape."""
    loaded = ui.load_model("minilm", kinds=("encoder",))
    learned = pe.learned_position_embeddings(loaded.model)  # (512, 384)
    summaries = [
        pe.summarize("MiniLM learned", learned),
        pe.summarize("Sinusoid", pe.sinusoidal_encoding(*learned.shape)),
    ]
    for column, summary in zip(st.columns(2), summaries, strict=True):
        with column:
            for i, figure in enumerate(figs.summary_figures(summary, ui.presenting())):
                ui.show_figure(figure, key=f"{summary.name}_{i}")
    curves = {summary.name: summary.by_offset for summary in summaries}
    ui.show_figure(
        figs.offset_curves(curves, "Mean cosine similarity by distance", "cosine"), key="learned_offsets"
    )
    st.caption("MiniLM's matrix is its real embeddings.position_embeddings weight, trained from data.")
    wanted = st.slider("Positions asked of MiniLM", 1, 1024, 600, key="learned_wanted")
    limit = relative.learned_limit(loaded.model, wanted)
    if limit.notice:
        st.warning(limit.notice)
    else:
        st.success(f"{wanted} positions fit: MiniLM has a learned vector for each of ids 0 to {wanted - 1}.")


def rotary_positions(settings: Settings) -> None:
    """SmolLM2's rotary frequencies, and scores that see only the offset."""
    loaded = ui.load_model("smollm2", kinds=("decoder",))
    spec = pe.rope_spec(loaded.config)
    cols = st.columns(3)
    cols[0].metric("θ (rope_theta)", f"{spec.theta:,.0f}")
    cols[1].metric("d_head", spec.head_dim)
    cols[2].metric("Rotation type", spec.rope_type)
    gap = pe.buffer_difference(loaded.model, spec)
    if gap is not None:
        st.caption(f"The model's own inv_freq buffer differs from θ^(−2j/d) by at most {gap:.1e}.")
    frequencies = {"SmolLM2 RoPE": spec.inv_freq, "sinusoid, C = 10,000": pe.frequencies(spec.head_dim)}
    ui.show_figure(figs.rope_frequencies_figure(frequencies), key="rope_freq")
    length = st.slider("Positions", 2, 128, 48, key="rope_n")
    seed = st.number_input("Seed of q and k", 0, 1000, 0, key="rope_seed")
    check = pe.seeded_rope_offset_check(spec, length, int(seed))
    st.metric("Largest spread along any diagonal", f"{check.max_diagonal_spread:.1e}")
    offsets = figs.offset_curves({"q_m · k_n": check.by_offset}, "Score by offset m − n", "q · k")
    widgets.side_by_side([figs.rope_offset_figure(check), offsets], keys=["rope_scores", "rope_offset"])
    st.caption(
        "RoPE rotates q and k by their positions instead of adding a vector to the input: "
        "rotate q by mθ and k by nθ and their dot product sees only m − n. q and k here are "
        "seeded random vectors; the frequencies are SmolLM2's, from its config."
    )


def x_plus_p(settings: Settings) -> None:
    """X + P against [X | P], and the embedding lookup as a matrix product."""
    loaded, text = short_text("xp_text")
    source = widgets.linked_radio("Positions P", pe.POSITION_SOURCES, "xp_source")

    with ui.user_errors():
        tokens, x = pe.token_embeddings(loaded, text)  # (n, 384)
        p = pe.positions_like(source, x, loaded.model)  # (n, 384)
        parts = pe.added_vs_concatenated(x, p)
    ui.show_figure(figs.added_vs_concatenated_figure(parts, tokens), key="xp_parts")
    st.latex(
        r"(x_i + p_i)\cdot(x_k + p_k) = x_i\cdot x_k + p_i\cdot p_k + \underbrace{x_i\cdot p_k + p_i\cdot x_k}_{\text{cross}}, \qquad [x_i; p_i]\cdot[x_k; p_k] = x_i\cdot x_k + p_i\cdot p_k"
    )
    widgets.side_by_side(
        [
            figs.encoding_heatmap(parts.added, "X + P (n x d)", "dimension"),
            figs.encoding_heatmap(parts.concatenated, "[X | P] (n x 2d)", "dimension"),
        ],
        keys=["xp_added", "xp_concat"],
    )
    x_norm, p_norm = parts.mean_norms
    st.caption(
        f"Mean norm of a token vector {x_norm:.2f}, of a position vector {p_norm:.2f}. Adding keeps d and mixes content and position in "
        "the cross terms; concatenating keeps them apart at the cost of width. X is MiniLM's word "
        "embedding table (before its token-type embedding and LayerNorm)."
    )
    st.markdown("**Where X comes from: the embedding lookup is a matrix product**")
    st.latex(
        r"x_n = \Omega_e\, e_{\mathrm{id}_n}, \qquad X = E\,\Omega_e^\top \quad (E: n \times V \text{ one-hot rows})"
    )
    with ui.user_errors():
        product = lookup.lookup_as_product(loaded, text)
        columns = product.used_columns()
        column_labels = [f"{i}" for i in columns]
        ui.show_figure(
            sa_figs.matrix_figure(
                product.one_hot[:, columns],
                list(product.tokens),
                column_labels,
                f"One-hot E: the {len(columns)} of {product.vocabulary_size:,} columns that hold a 1",
                "token",
                "token id (vocabulary column)",
                kind="sequential",
                presenting=ui.presenting(),
                zmid=None,
            ),
            key="xp_onehot",
        )
        st.metric(
            "Largest |E Ω_eᵀ − lookup(ids)|",
            f"{product.max_abs_difference:.1e}",
            f"{product.one_hot.shape[0]} x {product.vocabulary_size:,} times "
            f"{product.vocabulary_size:,} x {product.lookup.shape[1]}",
            delta_color="off",
        )
    st.caption(
        "Each one-hot row has a single 1, so the product copies one row of MiniLM's word "
        "embedding table Ω_e: a lookup is the same numbers without the V − 1 multiplications by zero."
    )


def relative_positions(settings: Settings) -> None:
    """Shaw's relative positions: a learned bias per clipped offset."""
    st.markdown(
        "Shaw et al. (2018) put positions into attention instead of the input: a learned vector "
        "a for each offset j − i, clipped to ±k, is added to the key in every layer."
    )
    st.latex(
        r"e_{ij} = \frac{q_i \cdot (k_j + a_{\mathrm{clip}(j-i,\,-k,\,k)})}{\sqrt{d}} = \frac{q_i \cdot k_j}{\sqrt{d}} + \underbrace{\frac{q_i \cdot a_{\mathrm{clip}(j-i)}}{\sqrt{d}}}_{\text{relative bias } B_{ij}}"
    )
    cols = st.columns(3)
    shaw_n = cols[0].slider("Positions", 2, 64, 24, key="shaw_n")
    clip = cols[1].slider("Clip k", 0, 16, 4, key="shaw_clip")
    shaw_seed = cols[2].number_input("Seed of q and a", 0, 1000, 0, key="shaw_seed")
    with ui.user_errors():
        shaw = relative.seeded_shaw_check(shaw_n, 64, clip, int(shaw_seed))
    st.metric("Largest spread along any diagonal of B", f"{shaw.max_diagonal_spread:.1e}")
    cols = st.columns(2)
    with cols[0]:
        figure = figs.similarity_heatmap(shaw.bias, "Relative bias B: one value per clipped offset")
        ui.show_figure(figure.update_traces(colorscale="RdBu", zmid=0.0), key="shaw_bias")
    with cols[1]:
        ui.show_figure(
            figs.shaw_offset_figure(list(range(-shaw_n + 1, shaw_n)), shaw.by_offset, clip),
            key="shaw_offset",
        )
    st.caption(
        f"2k + 1 = {2 * clip + 1} learned vectors cover every offset: keys farther than {clip} apart share "
        "the end vectors, so any length runs. q and a here are seeded random vectors (d = 64) with the "
        "same q at every position: B depends on j − i only. Shaw et al. add a second table to the values."
    )
    st.subheader("Four ways to give attention positions")
    st.dataframe(list(relative.COMPARISON), hide_index=True, width="stretch")


def add_as_concatenate(settings: Settings) -> None:
    """Adding as concatenating: X and P on disjoint dimensions."""
    st.markdown(
        "Adding can be concatenating: zero the last K of X's D dimensions and the first D − K of P's. "
        "The sum then holds X's first D − K coordinates and P's K side by side, and every cross "
        "term is a sum of products with a zero factor."
    )
    st.latex(
        r"X' = [X_{:,1..D-K} \mid 0], \quad P' = [0 \mid P], \qquad X' + P' = [X_{:,1..D-K} \mid P], \quad X' P'^\top = 0"
    )
    loaded, text = short_text("dc_text")
    cols = st.columns(2)
    source = cols[0].radio("Positions P", concat.SOURCES, horizontal=True, key="dc_source")
    width = cols[1].slider("K dimensions for positions", 1, 383, 64, key="dc_k")
    with ui.user_errors():
        tokens, x = pe.token_embeddings(loaded, text)  # (n, 384)
        disjoint = concat.disjoint_sum(x, concat.positions(source, len(tokens), width, loaded.model))
    cols = st.columns(3)
    cols[0].metric("Largest |X′ + P′ − [X | P]|", f"{disjoint.max_abs_difference:.1e}")
    cols[1].metric("Largest cross term", f"{disjoint.max_abs_cross:.1e}")
    cols[2].metric("Share of X's squared norm kept", f"{disjoint.kept:.1%}")
    cols = st.columns(3)
    for i, (column, matrix, title) in enumerate(
        zip(
            cols,
            (disjoint.x_part, disjoint.p_part, disjoint.added),
            ("X′: last K dimensions zeroed", "P′: first D − K dimensions zeroed", "X′ + P′ = [X | P]"),
            strict=True,
        )
    ):
        with column:
            ui.show_figure(figs.encoding_heatmap(matrix, title, "dimension"), key=f"dc_part_{i}")
    parts = pe.added_vs_concatenated(disjoint.x_part, disjoint.p_part)
    ui.show_figure(figs.added_vs_concatenated_figure(parts, tokens), key="dc_parts")
    st.caption(
        f"X is MiniLM's word embeddings of the text (D = {x.shape[1]}); the sum is the concatenation "
        "to the last bit and the cross panel is all zeros. The price is the K dimensions X gives up: "
        "a trained model can learn such a split, or use it partly. One-hot positions are the "
        "extreme: position i is the unit vector e_i, exact but needing a dimension per position "
        "(K ≥ n) and saying nothing about which positions are near."
    )


def floater_flow(settings: Settings) -> None:
    """FLOATER's positions as a flow, beside the sinusoid and an RNN."""
    n, d, base, encoding = settings.n, settings.d, settings.base, settings.encoding
    st.markdown(
        "FLOATER (Liu et al. 2020) lets the position vector flow along a learned vector field, "
        "dp/dt = h(t, p; θ), and reads position i at t = i. The sinusoid is one such flow: each (sin, cos) "
        "pair of frequency ω solves d/dt (s, c) = ω (c, −s). The comparison the Toronto slides take from "
        "the paper:"
    )
    st.dataframe(list(floater.COMPARISON), hide_index=True, width="stretch")
    st.caption(
        "Inductive: runs at lengths never seen in training. Data-driven: learned from the data. "
        "Parameter-efficient: its parameters do not grow with the longest sequence. The paper (Table 1) "
        "marks relative positions not inductive although clipped offsets run at any length (Relative tab): "
        "past ±k every offset looks the same. Rotary came after the paper; its row is ours."
    )
    st.latex(r"\frac{dp}{dt} = A\,p + s\,h(t, p), \qquad p_i = p(i), \qquad p(0) = p^{\sin}_0")
    cols = st.columns(2)
    strength = cols[0].slider(
        "Strength s of the learned part", 0.0, 0.5, floater.STRENGTH, 0.01, key="floater_strength"
    )
    floater_seed = int(cols[1].number_input("Seed of h and of the RNN", 0, 1000, 0, key="floater_seed"))
    field = floater.neural_field(d, floater_seed)
    flow = floater.ode_positions(n, d, field, strength, base)
    recurrence = floater.rnn_positions(n, d, floater_seed)
    figures = [
        figs.encoding_heatmap(encoding, f"Sinusoid, C = {base:,}"),
        figs.encoding_heatmap(flow, f"FLOATER's ODE, s = {strength:g}"),
        figs.encoding_heatmap(recurrence.positions, "RNN on no input"),
    ]
    widgets.side_by_side(figures, keys=["floater_sin", "floater_ode", "floater_rnn"])
    ode_step = floater.step_sizes(flow).max() if n > 1 else 0.0
    rnn_step = floater.step_sizes(recurrence.positions).max() if n > 1 else 0.0
    st.caption(
        f"All three are n = {n} positions of d = {d} (the sidebar's). A is the sinusoid's rotations and h a "
        f"random one-hidden-layer network (seed {floater_seed}, {field.parameters:,} parameters at any "
        "length), not trained: with s = 0 the flow is the sinusoid to float precision, and s bends it, most "
        "in the slow columns on the right, where a push adds up. The flow is integrated by exponential Euler "
        f"steps, {floater.SUBSTEPS} per position (the rotations exactly, h by Euler). Positions are a "
        f"continuous function of t: neighbours differ by at most {ode_step:.2f} here. The RNN, "
        "p_i = tanh(W p_(i−1) + u) from p_0 = 0 with the same seed, is the discrete relative: one step per "
        f"position, {d * d + d:,} parameters at any length, and neighbours that may differ by up to "
        f"{rnn_step:.2f}, with nothing in between."
    )
