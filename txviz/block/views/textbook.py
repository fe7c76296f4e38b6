"""The Transformer Block page's textbook tabs, no chosen model needed: experts, the Conformer, the 2017 base."""

import streamlit as st

from txviz.app import ui
from txviz.block import conformer, figures, moe, original, truncated


@ui.shared_resource(spinner="Loading the trained experts...")
def shipped_experts():
    return moe.load()


@ui.shared_resource(spinner="Differentiating the Conformer block...")
def conformer_reads(kernel: int, frame: int, seed: int):
    return conformer.reads(kernel, frame, seed=seed)


@ui.shared_resource(spinner="Reading the configs and counting...")
def original_numbers():
    # Configs and meta-device structures only: no weights are loaded, every session shares the numbers.
    return original.torch_check(), tuple(original.packaged(name) for name in original.PACKAGED)


def mixture_of_experts(loaded, settings) -> None:
    """The toy mixture of experts: its scores against dense FFNs, and where the router sends points."""
    st.markdown(
        "A mixture of experts replaces the block's feed-forward network by E of them and a router "
        "(Switch Transformer, Fedus et al. 2021): the router scores the experts for each token, the "
        "top one runs, and its output is scaled by the router's probability. Each token pays for one "
        "FFN while the layer holds E, and a balancing loss E·Σᵢ fᵢ Pᵢ (fᵢ the share of tokens sent to "
        "expert i, Pᵢ its mean probability) keeps every expert in use. A toy shows it: points in four "
        "regions, each with its own function to fit."
    )
    st.caption(moe.GSHARD)
    moe_models, moe_runs = shipped_experts()
    st.dataframe(moe.score_rows(moe_runs), hide_index=True)
    moe_config = moe.MoEConfig(**moe_runs["config"])
    routed = moe.routing(moe_models[moe.MODELS[1]], moe_config)
    left, right = st.columns([3, 2])
    with left:
        ui.show_figure(figures.moe_routing(routed, moe.REGIONS), key="moe_routing")
    with right:
        ui.show_figure(figures.moe_by_region(routed.by_region, moe.REGIONS), key="moe_by_region")
    st.caption(
        f"All three trained by `python -m txviz train moe` on the same batches (seed {moe_config.seed}, "
        f"{moe_config.steps} steps, one thread) and scored on the same {moe_config.held_out:,} held-out "
        "points. The mixture runs one expert's width per point, as the small dense FFN does, yet fits "
        "at least as well as the dense FFN with all experts' width. The router learns its own split "
        "of the plane: it need not follow the regions one to one."
    )


def conformer_block(loaded, settings) -> None:
    """The Conformer block's wiring and what each part reads, then truncated attention's cost."""
    st.markdown(
        "The Conformer (Gulati et al. 2020) is the transformer block speech recognisers use: between "
        "self-attention and a second feed-forward network it adds a **convolution module**, whose "
        "depthwise convolution reads a fixed window of frames around each frame. Speech comes as "
        "10 ms frames of a spectrogram, and much of what matters is local (a phone lasts a few "
        "frames, formant transitions a few more): attention finds the global context, the "
        "convolution the local patterns, cheaply. In the paper's ablation, removing the "
        "convolution module hurt the word error rate."
    )
    cols = st.columns(3)
    width = cols[0].select_slider("Depthwise kernel (frames)", [3, 7, 15, 31, 63], 31, key="conformer_k")
    frame = cols[1].slider("Output frame t", 0, conformer.FRAMES - 1, 50, key="conformer_t")
    seed = int(cols[2].number_input("Seed of the random weights", 0, 1000, 0, key="conformer_seed"))
    ui.show_figure(
        figures.conformer_diagram(conformer.MODULES, conformer.CONV_LAYERS, width),
        key="conformer_diagram",
    )
    with ui.user_errors():
        conformer_result = conformer_reads(width, frame, seed)
    for col, (part, label) in zip(
        st.columns(2),
        (("convolution module", "Convolution module"), ("self-attention", "Self-attention")),
        strict=True,
    ):
        first, last = conformer_result.span(part)
        col.metric(
            f"{label} reads frames", f"{first} to {last}", f"{last - first + 1} frames", delta_color="off"
        )
    ui.show_figure(figures.conformer_reads(conformer_result), key="conformer_reads")
    st.caption(
        f"The block below is code run on seeded random weights (d = {conformer.D_MODEL}, "
        f"{conformer.HEADS} heads, {conformer.FRAMES} random frames), not a trained model: it shows "
        "the wiring and what each part reads, from autograd. The paper's attention uses relative "
        "positions and its kernel is 32 frames; here attention is plain and the kernel odd, so the "
        "window is centred. Shaded: the depthwise kernel's window around frame t."
    )
    with st.expander("The block as code"):
        st.code(conformer.source(), language="python")
    truncated_attention()


def truncated_attention() -> None:
    """What truncating self-attention to a window saves on a minute of speech."""
    st.subheader("Speech as a very long sequence: truncated self-attention")
    st.markdown(
        "At 10 ms a frame, a minute of speech is 6,000 frames, and full self-attention scores every pair of "
        "them: T². Streaming recognisers truncate it (the Transformer Transducer, Zhang et al. 2020): frame "
        "t attends only to the frames from t − left to t + right, so the work grows as T·w, w = left + "
        "right + 1, and a frame never waits for more than `right` frames of the future."
    )
    cols = st.columns(2)
    left_context = cols[0].slider("Frames back (left context)", 0, 256, 64, key="truncated_left")
    right_context = cols[1].slider("Frames ahead (right context)", 0, 64, 8, key="truncated_right")
    cost_rows = truncated.costs(left_context, right_context)
    minute = next(row for row in cost_rows if row.frames == 6_000)
    cols = st.columns(3)
    cols[0].metric("One minute, full: pairs", f"{minute.full:,}")
    cols[1].metric("One minute, truncated: pairs", f"{minute.truncated:,}")
    cols[2].metric("Fewer by", f"{minute.ratio:,.0f}×")
    ui.show_figure(figures.truncated_costs(cost_rows, left_context, right_context), key="truncated_costs")
    st.dataframe(truncated.table(cost_rows), hide_index=True, width="stretch")
    st.caption(
        "Counted exactly, per head and layer: the window is cut at both ends of the speech, so the "
        "truncated count is T·w − left(left + 1)/2 − right(right + 1)/2 (left and right at most T − 1), "
        f"not T·w. Each pair costs 2 d multiply-adds (d = {truncated.D_HEAD} per head here): the score "
        "q · k and its share of v. The price: a frame hears only its window in one layer, though stacking "
        "L layers widens what the top one reads to L·left frames back and L·right ahead."
    )


def transformer_base(loaded, settings) -> None:
    """The 2017 base model's shapes and parameter count, checked against torch.nn.Transformer."""
    st.markdown(
        "The original Transformer (Vaswani et al. 2017, the base model of the CS60010 slides): 6 encoder "
        "and 6 decoder layers, d_model = 512, 8 heads of 64, a feed-forward network of width 2048 on "
        "each position, dropout 0.1 on every sub-block's output and on the embeddings plus positions, "
        "post-LN, sinusoidal positions and one embedding shared by both stacks and the output."
    )
    st.latex(r"\mathrm{FFN}(x) = W_2 \max(0,\ W_1 x + b_1) + b_2")
    with ui.user_errors():
        check, shipped = original_numbers()
    base = original.ORIGINAL
    columns = ((base, check.torch_total + check.embedding - check.final_norms), *shipped)
    st.dataframe(original.rows(columns), hide_index=True, width="stretch")
    st.caption(
        "MiniLM's and SmolLM2's columns are read from their config.json; their counted parameters are "
        "those of the model transformers builds from that config, which the formula matches exactly. "
        "The 2017 column's count is torch.nn.Transformer's layers plus the shared embedding, without "
        "torch's two extra norms (below)."
    )
    st.markdown("**Counting the 2017 model from its shapes**")
    st.dataframe(
        [
            {"part": p.name, "formula": p.formula, "parameters": f"{p.count:,}"}
            for p in original.breakdown(base)
        ],
        hide_index=True,
    )
    enc, dec = check.encoder_layer, check.decoder_layer
    st.caption(
        f"One encoder layer: attention 4 (512² + 512) + FFN (2 · 512 · 2048 + 2048 + 512) + two LayerNorms "
        f"2 · 2 · 512 = {enc[0]:,}; torch.nn.Transformer's encoder layer holds {enc[1]:,}. One decoder layer "
        f"adds cross-attention and a third LayerNorm: {dec[0]:,}, torch {dec[1]:,}. All 12 layers: "
        f"{check.layers[0]:,} by formula, {check.layers[1]:,} in torch. What differs: torch.nn.Transformer "
        f"adds a final LayerNorm after each stack ({check.final_norms:,} parameters; the post-LN paper has "
        f"none), for {check.torch_total:,} in all, and holds no embedding: the paper's shared 37,000-token "
        f"embedding, {check.embedding:,} parameters, is also its pre-softmax projection. By these shapes the "
        f"model has {original.total(base):,} parameters; the paper's Table 3 gives "
        f"{original.PAPER_PARAMETERS} and does not break its number down."
    )
