"""The transformer block on a real model: data flow, one block as code, residual stream, norms, logit lens."""

import streamlit as st

from txviz import models
from txviz.app import sessions, teaching, ui, widgets
from txviz.block import conformer, dataflow, figures, lens, moe, norms, original, residual, truncated
from txviz.block.opened import FORM_NOTES, open_block
from txviz.block.recording import STAGES, read_only, run_text

VIEWS = [
    "Data flow",
    "One block",
    "Residual stream",
    "LayerNorm vs BatchNorm",
    "Logit lens",
    "Mixture of experts",
    "Conformer",
    "Transformer base (2017)",
]
KINDS = ("encoder", "decoder", "encoder-decoder")
DEFAULT_TEXT = "The cat sat on the mat because it was warm."
DEFAULT_SENTENCES = (
    "The cat sat on the mat.\nA dog barked.\nRain fell all night over the quiet old town.\nHi."
)
LENS_MODEL = "smollm2"  # the decoder the lens tab offers when the chosen model has no lens
LENS_POSITIONS = 40  # the lens grid shows the last positions: every cell is a full vocabulary softmax

ui.setup_page(
    "Transformer_Block",
    "Token ids become vectors, N identical blocks each add what attention and the feed-forward network "
    "compute to a residual stream, and a head turns the stream into the output. Every number below is "
    "computed live on the chosen model and checked against the model's own output.",
)


@ui.cached(max_entries=8, spinner="Running the model...")
@ui.heavy
def cached_run(loaded, text: str, stages: tuple[str, ...]):
    # Shared by every session: arrays locked read-only. The first view asks for no stages.
    return read_only(run_text(loaded, text, frozenset(stages)))


@ui.cached(max_entries=8, spinner="Running the block as code...")
@ui.heavy
def cached_block(loaded, text: str, stack: str, layer: int):
    return open_block(loaded, cached_run(loaded, text, ()), stack, layer)


@ui.cached(max_entries=4, spinner="Reading every layer with the output head...")
@ui.heavy
def cached_lens(loaded, text: str):
    run = cached_run(loaded, text, ())
    return lens.logit_lens(loaded, run, slice(-LENS_POSITIONS, None))


left, right = st.columns([1, 2])
with left:
    name = ui.model_picker(kinds=KINDS)
with right:
    text = ui.text_input("Text", DEFAULT_TEXT)
loaded = ui.load_model(name, kinds=KINDS)
with ui.user_errors():
    run = cached_run(loaded, text, ())
if run.notice:
    st.warning(run.notice)

stack_names = [s.name for s in run.stacks]
stack_col, layer_col = st.columns(2)
stack = stack_col.selectbox(
    "Stack",
    stack_names,
    index=stack_names.index(ui.link_value("block_stack", stack_names[0], stack_names)),
    key="block_stack",
    disabled=len(stack_names) == 1,
)
data = run.stack(stack)
n_layers = data.n_layers
layer = widgets.index_picker("Layer", n_layers, "block_layer", where=layer_col)
st.caption(
    f"{name}: {run.layout.family} layout, {run.layout.form} blocks, {len(data.tokens)} {stack} tokens."
)
flow, one, stream, batch, reading, experts, conformer_tab, base_tab = st.tabs(
    VIEWS, key="block_view", on_change="rerun", default=ui.link_tab("block_view", VIEWS)
)

if flow.open:
    with flow:
        boxes = dataflow.stages(run, stack)
        labels = {box.key: box.label.replace("\n", " ") for box in boxes}
        keys = list(labels)
        chosen = st.selectbox(
            "Stage (a box of the diagram)",
            keys,
            index=keys.index(ui.link_value("block_stage", "embedding", keys)),
            format_func=labels.get,
            key="block_stage",
        )
        ui.show_figure(figures.data_flow(boxes, chosen, f"{name}: one forward pass"), key="flow")
        teaching.notice(
            "every attention and MLP box adds its output to the residual stream rather than replacing it; "
            "the Logit lens tab reads that stream after each layer as if the model stopped there."
        )
        st.caption(next(box.detail for box in boxes if box.key == chosen))
        values = dataflow.stage_values(loaded, run, stack, chosen, layer)
        ui.show_figure(figures.stage_figure(values, data.tokens), key="stage")

if one.open:
    with one:
        with ui.user_errors():
            opened = cached_block(loaded, text, stack, layer)
        st.code("\n".join(opened.lines), language=None)
        st.caption(FORM_NOTES[opened.form])
        if opened.note:
            st.caption(opened.note)
        a, b = st.columns(2)
        a.metric(f"max |{opened.steps[-1].name} − model's own layer output|", f"{opened.max_difference:.2e}")
        b.metric("largest |value| of that output", f"{opened.scale:.3g}")
        n_heads = max(s.value.shape[0] for s in opened.steps if s.axes[0] == "head")
        head = widgets.index_picker("Head (for the per-head arrays)", n_heads, "block_head")
        ui.show_figure(figures.steps_overview(opened.steps, head), key="steps")
        names = [s.name for s in opened.steps]
        step_name = st.selectbox(
            "Open one intermediate", names, key="block_step",
            index=ui.link_index("block_step", names, len(names) - 1),

            format_func=lambda n: f"{n}  {opened.step(n).shape}",
        )  # fmt: skip
        step = opened.step(step_name)
        st.code(step.code, language=None)
        memory = run.stack("encoder").tokens if stack == "decoder" and len(stack_names) > 1 else None
        ui.show_figure(
            figures.step_figure(step, data.tokens, head, memory, n_heads, presenting=ui.presenting()),
            key="step",
        )
        st.dataframe(
            {
                "step": names,
                "code": [s.code for s in opened.steps],
                "shape": [str(s.shape) for s in opened.steps],
            },
            hide_index=True,
        )

if stream.open:
    with stream:
        full = cached_run(loaded, text, tuple(sorted(STAGES)))
        with ui.user_errors():
            sizes = residual.residual_norms(full.stack(stack))
        maps = {
            "the stream": sizes.stream,
            "what attention added": sizes.attn,
            "what the FFN added": sizes.ffn,
        }
        if sizes.cross is not None:
            maps["what cross-attention added"] = sizes.cross
        what = st.radio("Heatmap of", list(maps), horizontal=True, key="block_residual")
        matrix = maps[what]
        title = f"L2 norm of {what}, per layer and token"
        ui.show_figure(
            figures.residual_heatmap(
                matrix, data.tokens, title, stream=what == "the stream", presenting=ui.presenting()
            ),
            key="residual_map",
        )
        ui.show_figure(figures.residual_bars(sizes.per_layer()), key="residual_bars")
        st.caption(
            "Each block reads the stream and adds to it: x ← x + MHA(...), then x ← x + FFN(...). "
            + (
                "Post-LN blocks renormalise the sum after every block, so the stream's norm stays "
                "approximately constant, near √d times the LayerNorm gain's scale."
                if run.layout.form == "post-LN"
                else "In a pre-norm model nothing rescales the stream, so its norm grows with depth."
            )
        )

if batch.open:
    with batch:
        sentence_text = st.text_area(
            "Sentences of the batch, one per line",
            DEFAULT_SENTENCES,
            key="block_sentences",
            max_chars=ui.max_text_chars(),
        )
        with ui.user_errors():
            sentences = norms.sentences_of(sentence_text)
        c1, c2, c3 = st.columns(3)
        other = c1.selectbox(
            "Change sentence",
            range(2, len(sentences) + 1),
            key="block_other",
            format_func=lambda i: f"sentence {i}",
        )
        replacement = c2.text_input(
            "to",
            "Completely different words here, and many more of them.",
            key="block_swap",
            max_chars=ui.max_text_chars(),
        )
        padding = c3.slider("and add padding tokens", 0, 16, 4, key="block_padding")
        exclude = st.toggle("BatchNorm statistics over real tokens only (padding left out)", key="block_mask")
        changed = list(sentences)
        changed[other - 1] = replacement.strip() or sentences[other - 1]
        with ui.user_errors():
            first = norms.batch_activations(loaded, sentences, layer, stack=stack)
            second = norms.batch_activations(loaded, changed, layer, padding, stack=stack)
        st.caption(
            f"Activations: {first.where}, shape {first.x.shape} (sentences × padded tokens × features)."
        )
        st.markdown(
            "**LayerNorm** normalises each token over its **features** (the last axis): one mean and std per "
            "token. **BatchNorm** normalises each feature over the **sentences and positions** of the batch "
            "(the first two axes): one mean and std per feature, shared by every sentence, padding included "
            "unless left out. Both are shown without their learned scale and shift."
        )
        _, ln_mean, ln_std = norms.layer_norm(first.x)
        _, bn_mean, bn_std = norms.batch_norm(first.x, first.mask if exclude else None)
        labels = [f"s{b + 1}: {t}" for b, toks in enumerate(first.tokens) for t in toks]
        real = first.mask
        ui.show_figure(
            figures.norm_statistics(ln_mean[real], ln_std[real], bn_mean, bn_std, labels), key="norm_stats"
        )
        effect = norms.dependence(first, second, 0, exclude)
        ui.show_figure(
            figures.dependence_bars(effect, first.tokens[0], f"changing sentence {other} and the padding"),
            key="norm_effect",
        )
        st.caption(
            f"Largest change of sentence 1: LayerNorm {effect.layer_norm.max():.1e} (float rounding), "
            f"BatchNorm {effect.batch_norm.max():.3f}. Sentence 1 itself did not change."
        )


def use_model(model: str) -> None:
    """Runs before the next run draws the picker, so the picker may still be set."""
    st.session_state["model"] = model


def offer_lens_model(error: lens.NoLensError) -> None:
    """Say why the chosen model has no lens, with a button that switches to a decoder that has one."""
    decoders = [n for n in sessions.offered_models(models.names(("decoder",))) if n != name]
    st.info(str(error))
    if decoders:
        target = LENS_MODEL if LENS_MODEL in decoders else decoders[0]
        st.button(f"Switch to {target}", key="block_lens_switch", on_click=use_model, args=(target,))


if reading.open:
    with reading:
        try:
            lens.check_lens(loaded)
        except lens.NoLensError as error:
            offer_lens_model(error)
            st.stop()  # the lens tab is the open one: nothing below it is drawn in this run
        with ui.user_errors():
            result = cached_lens(loaded, text)
        if len(run.stack("decoder").tokens) > LENS_POSITIONS:
            st.caption(f"The grid shows the last {LENS_POSITIONS} positions.")
        ui.show_figure(figures.lens_grid(result, presenting=ui.presenting()), key="lens_grid")
        options = list(range(len(result.tokens)))
        position = st.selectbox(
            "Position", options, index=len(options) - 1, key="block_lens_position",
            format_func=lambda i: f"{i}: {result.tokens[i]}",
        )  # fmt: skip
        final_token = result.top_tokens[-1][position]
        ui.show_figure(figures.lens_position(result, position, final_token), key="lens_position")
        st.caption(
            "The last row equals the model's own prediction: the same final norm and head, the same input."
        )


@ui.shared_resource(spinner="Loading the trained experts...")
def shipped_experts():
    return moe.load()


if experts.open:
    with experts:
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


@ui.shared_resource(spinner="Differentiating the Conformer block...")
def conformer_reads(kernel: int, frame: int, seed: int):
    return conformer.reads(kernel, frame, seed=seed)


if conformer_tab.open:
    with conformer_tab:
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
        first, last = conformer_result.span("convolution module")
        cols = st.columns(2)
        cols[0].metric(
            "Convolution module reads frames",
            f"{first} to {last}",
            f"{last - first + 1} frames",
            delta_color="off",
        )
        first, last = conformer_result.span("self-attention")
        cols[1].metric(
            "Self-attention reads frames",
            f"{first} to {last}",
            f"{last - first + 1} frames",
            delta_color="off",
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


@ui.shared_resource(spinner="Reading the configs and counting...")
def original_numbers():
    # Configs and meta-device structures only: no weights are loaded, every session shares the numbers.
    return original.torch_check(), tuple(original.packaged(name) for name in original.PACKAGED)


if base_tab.open:
    with base_tab:
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
