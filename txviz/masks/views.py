"""The masking page's tabs: the pattern gallery, a pattern on a real model, its cost, Swin's windows, the
two training objectives, an encoder's outputs read by probes, and a decoder trained without its mask."""

import streamlit as st

from txviz.app import teaching, ui, widgets
from txviz.bench import masks as bench
from txviz.masks import figures as figs
from txviz.masks import merging, peeking
from txviz.masks import patterns as masks
from txviz.masks.effects import DecoderEffect, apply_pattern, prediction_rows
from txviz.objectives import causal, encoder_tasks, finetune, masked
from txviz.objectives import figures as objective_figs
from txviz.seq2seq.views.parallel import digits_input

PAIRS_NS = (16, 32, 64, 128, 256, 512, 1024, 2048)
LABELS = {key: p.label for key, p in masks.PATTERNS.items()}


def pattern_widgets(prefix: str, keys: list[str], default: str = "local") -> tuple[str, dict[str, int]]:
    """A pattern picker and one number input per parameter of the chosen pattern."""
    key = st.selectbox(
        "Pattern",
        keys,
        index=ui.link_index(f"{prefix}_pattern", keys, keys.index(default)),
        format_func=LABELS.get,
        key=f"{prefix}_pattern",
    )
    pattern = masks.PATTERNS[key]
    st.caption(pattern.description)
    columns = st.columns(max(1, len(pattern.params)))
    params = {
        p.name: int(
            col.number_input(
                p.label, p.minimum, 10_000, p.default, help=p.help or None, key=f"{prefix}_{key}_{p.name}"
            )
        )
        for col, p in zip(columns, pattern.params, strict=False)
    }
    return key, params


def gallery() -> None:
    """Every pattern as a grid of allowed pairs, and what each saves as n grows."""
    left, right = st.columns([2, 3])
    with left:
        key, params = pattern_widgets("gallery", list(LABELS))
        n = st.slider("Tokens n", 2, 64, ui.link_value("gallery_n", 16, range(2, 65)), key="gallery_n")

    with ui.user_errors():
        fixed = masks.ensure_attendable(masks.PATTERNS[key].mask(n, **params))
        pairs = {LABELS[key]: masks.pairs_computed(masks.PATTERNS[key], PAIRS_NS, **params)}
    with right:
        title = f"{LABELS[key]}: {masks.fraction_kept(fixed.mask):.1%} of pairs kept"
        ui.show_figure(figs.mask_grid(fixed.mask, title), key="grid")
        teaching.notice(
            "each cell says whether a query (row) may attend to a key (column); the share of pairs kept, "
            "in the title, is what the pattern saves against the n² of full attention."
        )
        if fixed.notice:
            st.warning(fixed.notice)
    ui.show_figure(figs.pairs_vs_n(PAIRS_NS, pairs), key="pairs")
    st.subheader("The textbook's eight interaction matrices")
    st.caption("Prince, Understanding Deep Learning, fig. 12.15, a) to h), drawn here for n tokens.")
    ui.show_figure(figs.mask_gallery(masks.textbook_eight(max(n, 8))), key="eight")
    ui.show_figure(figs.fraction_kept_bars(*masks.fraction_kept_by_pattern(n), n=n), key="kept")


@ui.cached(max_entries=8, spinner="Running the model with and without the pattern...")
@ui.heavy
def masked_run(loaded, text: str, pattern: str, params: tuple):
    return apply_pattern(loaded, text, pattern, **dict(params))


def on_a_real_model() -> None:
    """A pattern applied to every layer of a real model: one head before and after, and the change."""
    name = ui.model_picker(kinds=("encoder", "decoder"), default="smollm2", key="model")
    loaded = ui.load_model(name, kinds=("encoder", "decoder"))
    text = ui.text_input("Text", "The animal didn't cross the street because it was too tired.", key="text")
    key, params = pattern_widgets("model", [k for k, p in masks.PATTERNS.items() if p.square])
    with ui.user_errors():
        run = masked_run(loaded, text, key, tuple(sorted(params.items())))
    if run.notice:
        st.warning(run.notice)
    layer, head = widgets.layer_head_picker(run.before.n_layers, run.before.n_heads)
    title = f"{name}, layer {layer}, head {head}: {LABELS[key]} on every layer"
    ui.show_figure(
        figs.before_after(
            run.before.head(layer, head),
            run.after.head(layer, head),
            run.before.query_tokens,
            title,
            ui.presenting(),
        ),
        key="before_after",
    )
    effect = run.effect
    if isinstance(effect, DecoderEffect):
        cols = st.columns(2)
        change = f"{effect.loss_after - effect.loss_before:+.3f} vs {effect.loss_before:.3f} unmasked"
        cols[0].metric(
            "Loss on the text (nats per token)", f"{effect.loss_after:.3f}", change, delta_color="inverse"
        )
        same = "same as unmasked" if effect.same_prediction else f"unmasked: {effect.top_before.tokens[0]!r}"
        cols[1].metric("Next token", repr(effect.top_after.tokens[0]), same, delta_color="off")
        st.dataframe(prediction_rows(effect), hide_index=True)
    else:
        st.metric("Sentence embedding: cosine to the unmasked one", f"{effect.sentence_cosine:.4f}")
        ui.show_figure(figs.token_similarity_bars(run.before.query_tokens, effect.token_cosine), key="cosine")
    st.caption(
        "The pattern applies to every layer, on top of the model's own mask. The model was trained "
        "without it: a large change says what the pattern removes, not how a model trained with it would do."
    )


def real_cost() -> None:
    """Dense against block-sparse attention, saved or measured live (a tab may time code: bench/)."""
    options = {p.key: p for p in bench.BENCH_PATTERNS}
    choice = st.selectbox(
        "Pattern", list(options), index=1, format_func=lambda k: options[k].label, key="cost_pattern"
    )
    pattern = options[choice]
    sizes = bench.PAGE_SIZES  # read at each run: a test swaps in one small size
    span = f"{sizes[0]:,} to {sizes[-1]:,} tokens" if len(sizes) > 1 else f"{sizes[0]:,} tokens"
    if st.button(f"Measure on this machine ({span})", key="measure"):
        rows = widgets.with_progress(
            "Compiling FlexAttention (seconds per length, the first time)...",
            lambda progress: bench.run_benchmark(
                sizes, [pattern], progress=lambda done, total, what: progress(done / total, what)
            ),
        )
        st.session_state["measured"] = (choice, rows)
    measured = st.session_state.get("measured")
    live = measured is not None and measured[0] == choice
    saved = bench.load_saved()
    rows = measured[1] if live else bench.saved_rows(choice, saved)
    if not rows:
        st.info("No saved numbers for this pattern: press the button to measure.")
    else:
        source = (
            "measured just now" if live else f"saved run, {saved['threads']} thread, torch {saved['torch']}"
        )
        ns, w = [r.n for r in rows], [pattern.keys_per_query(r.n) for r in rows]
        time_title = f"CPU time, {pattern.label} ({source})"
        dense, sparse = [r.dense_s for r in rows], [r.sparse_s for r in rows]
        ui.show_figure(figs.cost_curves(ns, dense, sparse, w, "CPU seconds", time_title), key="cost_time")
        if not live and all(r.dense_bytes and r.sparse_bytes for r in rows):
            dense, sparse = [r.dense_bytes / 2**20 for r in rows], [r.sparse_bytes / 2**20 for r in rows]
            memory_title = "Peak memory added by the call"
            ui.show_figure(figs.cost_curves(ns, dense, sparse, w, "MiB", memory_title), key="cost_memory")
        st.dataframe(bench.summary_rows(rows), hide_index=True)
    st.caption(
        "Dense: PyTorch SDPA with a boolean mask, every pair computed. Sparse: FlexAttention with a block "
        f"mask of {bench.sa.BLOCK_SIZE}-token tiles, skipping tiles with no allowed pair. "
        "Full table: `python -m txviz bench masks`."
    )


def swin() -> None:
    """Swin's regular and shifted windows, and patch merging stage by stage."""
    cols = st.columns(3)
    height = cols[0].slider("Patch rows", 2, 16, ui.link_value("swin_h", 8, range(2, 17)), key="swin_h")
    width = cols[1].slider("Patch columns", 2, 16, ui.link_value("swin_w", 8, range(2, 17)), key="swin_w")
    window = cols[2].slider(
        "Window (patches)", 1, 8, ui.link_value("swin_window", 4, range(1, 9)), key="swin_window"
    )

    regular = masks.swin_regions(height, width, window)
    shifted = masks.swin_regions(height, width, window, shifted=True)
    ui.show_figure(figs.swin_figure(regular, shifted, window), key="swin")
    st.caption(
        "Swin alternates the two: shifted windows let information cross the previous windows' borders."
    )
    st.subheader("Patch merging: 2 × 2 patches become one, stage by stage")
    with ui.user_errors():
        stages, _ = merging.merge_stages(height, width, window)
    ui.show_figure(figs.merge_stages_figure(stages), key="swin_merge")
    st.dataframe(
        [
            {
                "stage": i + 1,
                "grid": f"{s.rows} × {s.columns}",
                "channels": s.channels,
                "one patch covers": f"{s.patch_span} × {s.patch_span} first-stage patches",
                "windows": s.n_windows,
                "pairs attention computes": s.attention_pairs,
            }
            for i, s in enumerate(stages)
        ],
        hide_index=True,
    )
    st.caption(
        "Each merge concatenates a 2 × 2 group (4C channels) and maps it to 2C: the grid halves, the "
        "window stays the same number of patches, so it covers four times the image until one window "
        "sees all of it (Prince, fig. 12.18 d-f). An odd side is padded with zeros first."
    )


@ui.shared_resource(spinner="Loading the tiny BERT...")
def tiny_bert():
    """The project's tiny BERT with its masked-word head, shared by every session."""
    return masked.load_mlm()


@ui.cached(max_entries=16, spinner="Scoring every next token...")
@ui.heavy
def next_token_run(loaded, text: str):
    return causal.next_token_objective(loaded, text)


def objectives() -> None:
    """GPT's next-token loss at every position beside BERT's masked words."""
    st.markdown(
        "**GPT** (a decoder, causal mask): one pass over the text predicts the next token at "
        "*every* position, so every position is a loss term. **BERT** (an encoder, no mask): some "
        "words are replaced by [MASK] and only those are predicted (Prince, figs. 12.10 to 12.12)."
    )
    gpt_text = ui.text_input(
        "Text for SmolLM2", "The cat sat on the mat because it was tired.", key="gpt_text", height=68
    )
    smollm2 = ui.load_model("smollm2", kinds=("decoder",))
    with ui.user_errors():
        objective = next_token_run(smollm2, gpt_text)
    if objective.notice:
        st.warning(objective.notice)
    ui.show_figure(objective_figs.next_token_figure(objective), key="gpt_objective")
    st.caption(
        f"Teacher forcing: the real text is fed in and each position predicts what actually comes next. "
        f"Mean of the {len(objective.losses)} terms −log p: {objective.mean_loss:.3f} nats, the loss "
        "SmolLM2 was trained to lower."
    )
    with ui.user_errors():
        bert = tiny_bert()
    meta = masked.read_meta()
    bert_text = st.text_input(
        "Sentence for the tiny BERT",
        meta.get("example_text", ""),
        key="bert_text",
        max_chars=ui.max_text_chars(),
    )
    with ui.user_errors():
        words, cut = masked.sentence_words(bert.tokenizer, bert_text, bert.config.max_position_embeddings - 2)
    if cut:
        st.warning(cut)
    chosen = st.multiselect(
        "Words to mask",
        list(range(len(words))),
        default=[i for i in (2, 5) if i < len(words)],
        format_func=lambda i: f"{i + 1}: {words[i]}",
        key=f"bert_masked_{len(words)}",
    )
    with ui.user_errors():
        prediction = masked.predict_masked(bert, bert_text, chosen)
    ui.show_figure(objective_figs.masked_figure(prediction), key="bert_objective")
    st.dataframe(masked.prediction_rows(prediction), hide_index=True, width="stretch")
    st.caption(masked.accuracy_note(meta))


@ui.shared_resource(spinner="Reading the probes...")
def encoder_probes():
    return encoder_tasks.load_probes()


def using_the_encoder() -> None:
    """The frozen tiny BERT read by a sentence classifier and a word tagger, then fine-tuned."""
    st.markdown(
        "An encoder gives one output per token. Read the **[CLS]** output with a classifier to label "
        "the whole sentence; read every other output with a tagger to label each word (Prince, fig. "
        "12.11). Here the tiny BERT of the previous tab, pretrained on masked words, is frozen, and two "
        "logistic regressions read its last layer: is the sentence **true** to the grammar or **false** "
        "(one word swapped for a wrong one of its kind), and **which word** is wrong."
    )
    probes = encoder_probes()
    with ui.user_errors():
        bert = tiny_bert()
    sentence = st.text_input(
        "Sentence of the grammar (try swapping a word)",
        encoder_tasks.EXAMPLE,
        key="encoder_sentence",
        max_chars=ui.max_text_chars(),
    )
    with ui.user_errors():
        reading = encoder_tasks.read(bert, probes, sentence)
    cols = st.columns(2)
    cols[0].metric("Classifier on [CLS]: p(false)", f"{reading.false_probability:.2f}")
    flagged = [w for w, p in zip(reading.tokens[1:-1], reading.wrong_probability, strict=True) if p > 0.5]
    cols[1].metric("Tagger: words marked wrong", ", ".join(flagged) or "none")
    ui.show_figure(objective_figs.word_tags_figure(reading), key="encoder_tags")
    ui.show_figure(objective_figs.cls_attention_figure(reading, ui.presenting()), key="encoder_cls")
    st.caption(
        "The classifier sees only the last layer's [CLS] output: these rows are where [CLS] gathered it "
        "from. The probes are linear, so what they find the frozen features already held; attention "
        "shows where information flowed, not why the probe decided."
    )
    st.dataframe(encoder_tasks.score_rows(probes.runs), hide_index=True, width="stretch")
    st.caption(encoder_tasks.LIMITS)
    st.markdown(
        "**Fine-tuning.** Unfreeze the encoder and train every weight with the two heads: the same "
        "heads, batches, steps and held-out sentences as the frozen run, the heads' learning rate the "
        "same in both. The frozen encoder's features were made for guessing masked words; fine-tuning "
        "reshapes them for the task, at the cost of a copy of the whole model per task."
    )
    tuned = finetune.load()
    st.dataframe(finetune.score_rows(tuned, probes.runs), hide_index=True, width="stretch")
    st.caption(
        f"Held-out: {tuned['heldout_sentences']} sentences never trained on (nor pretrained on). Both heads "
        f"train together ({tuned['config']['batch_size']} sentences a step, seed {tuned['config']['seed']}). "
        "Run by `python -m txviz train finetune`: about two minutes on one CPU thread."
    )


@ui.shared_resource(spinner="Loading the two decoders...")
def peeking_decoders():
    return peeking.load()


def why_the_mask() -> None:
    """Two decoders trained alike, one without its causal mask: its loss and its answers."""
    st.markdown(peeking.__doc__.split("\n\n", 1)[1].replace("\n", " "))
    decoders, peek_runs = peeking_decoders()
    share = peeking.digit_share(peek_runs["config"]["held_out"])
    curves = {mask: peek_runs[mask]["curve"] for mask in peeking.MASKS}
    ui.show_figure(
        objective_figs.mask_or_not_curves(curves, peek_runs["digit_floor"], share), key="peek_curves"
    )
    teaching.notice(
        "The unmasked decoder's loss falls far below the dashed floor: it is not predicting the next "
        "token, it is reading it. Then it cannot write a single held-out answer."
    )
    st.dataframe(peeking.score_rows(peek_runs), hide_index=True, width="stretch")
    digits = digits_input("peek_digits")
    st.dataframe(peeking.examples(decoders, digits), hide_index=True, width="stretch")
    config = peek_runs["config"]
    st.caption(
        f"Both decoders: {config['layers']} layers × {config['heads']} heads, d = {config['d_model']}, the "
        f"same initial weights (seed {config['seed']}) and the same {config['steps']} batches of "
        f"{config['batch_size']} rows of {peeking.WINDOW} tokens, examples packed one after another. "
        f"Held-out: {config['held_out']} digit strings never trained on, answered greedily. Trained by "
        "`python -m txviz train peeking` (about two minutes on one CPU thread)."
    )
