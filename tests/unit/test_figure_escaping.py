"""Every figure builder shows token and user text literally: plotly reads <b>, <a href> and &...; in
tick labels, hover text, titles, legends and annotations, so builders must escape it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import txviz
import txviz.figures
from txviz.core.candidates import Candidates
from txviz.core.trace import AttentionTrace

BOLD, LINK, ENTITY = "<b>x</b>", '<a href="http://e.x">y</a>', "&amp;"
HOSTILE = (BOLD, LINK, ENTITY)
ESCAPED = {BOLD: "&lt;b&gt;x&lt;/b&gt;", LINK: '&lt;a href="http://e.x"&gt;y&lt;/a&gt;', ENTITY: "&amp;amp;"}
TOKENS = (*HOSTILE, "cat")
OWN_MARKUP = re.compile(r"<br>|</?extra>")  # the builders' own tags in hover templates
RNG = np.random.default_rng(0)


def figure_modules() -> list[str]:
    """txviz/figures/*.py and every topic's figures.py."""
    shared = [f"txviz.figures.{m.name}" for m in pkgutil.iter_modules(txviz.figures.__path__)]
    root = Path(txviz.__path__[0])
    topics = [f"txviz.{p.parent.name}.figures" for p in sorted(root.glob("*/figures.py"))]
    return shared + topics


def builders() -> list[str]:
    """Public functions of the figure modules that return plotly figures or altair charts."""
    found = []
    for name in figure_modules():
        module = importlib.import_module(name)
        for function_name, function in inspect.getmembers(module, inspect.isfunction):
            returns = str(inspect.signature(function).return_annotation)
            figure = "Figure" in returns or "Chart" in returns
            if function.__module__ == name and not function_name.startswith("_") and figure:
                found.append(f"{name.removeprefix('txviz.')}.{function_name}")
    return sorted(found)


CASES: dict[str, Callable[[], tuple]] = {}  # name -> () -> (figure or figures, hostile texts fed)
NO_TEXT = {  # builders that take no token or user text at all (numbers and fixed labels only)
    "block.figures.truncated_costs",  # frame counts and two window sizes
    "coref.figures.cv_chart",
    "coursemap.figures.course_map_figure",  # the map's own part names and page titles
    "generation.figures.kv_cache_growth",
    "generation.figures.kv_cache_per_layer",
    "masks.figures.swin_figure",
    "entailment.figures.probabilities",  # the three labels and two fixed model names
    "entailment.figures.sums",
    "objectives.figures.mask_or_not_curves",  # two fixed run names and numbers
    "why.figures.cost_lines",  # CNN / RNN / attention: fixed names and numbers
    "why.figures.dependence_grids",
    "why.figures.depth_against_n",
    "why.figures.thread_bars",
    "heads.figures.all_detectors",  # detector names and numbers only
    "heads.figures.correlation_heatmap",  # measure names only
    "masks.figures.merge_stages_figure",
    "positional.figures.shaw_offset_figure",
    "selfattention.figures.linear_cost_figure",
    "positional.figures.rope_offset_figure",
    "positional.figures.rotation_figure",
    "positional.figures.shift_figure",
    "tokenization.figures.vocab_curve",
    "vision.figures.head_statistics_figure",
    "vision.figures.patch_grid_figure",
    "imagegpt.figures.bits_figure",  # pixels, grey levels and measured numbers; no text in
    "imagegpt.figures.canvas_figure",
    "imagegpt.figures.digits_row",
    "imagegpt.figures.distribution_figure",
    "imagegpt.figures.heads_on_image",
    "captioning.figures.canvas_figure",  # its words are the model's ten digit words, escaped anyway
    "captioning.figures.scores_figure",
    "captioning.figures.word_attention_figure",
    "block.figures.moe_routing",  # the toy's fixed quadrant names and expert numbers
    "block.figures.moe_by_region",
    "selfattention.figures.efficient_error_figure",  # fixed method names and measured errors
    "selfattention.figures.families_figure",  # the fixed families of efficient transformers
    "why.figures.forgetting_lines",  # two fixed series names
    "why.figures.convolution_figure",  # pixels, a kernel and fixed titles
    "why.figures.hierarchy_lines",  # the shipped sentences' fixed phrases and numbers
    "block.figures.conformer_diagram",  # the block's fixed module names
    "block.figures.conformer_reads",  # three fixed part names
    "longdoc.figures.summaries_figure",  # the four summary names and numbers only
    "whyattend.figures.pairs_heatmap",  # part names (L3H1, token embedding) and numbers, drawn as text by Vega
}


def case(name: str):
    def register(make):
        CASES[name] = make
        return make

    return register


def weights(*shape: int) -> np.ndarray:
    w = RNG.random(shape).astype(np.float32)
    return w / w.sum(axis=-1, keepdims=True)


def trace(tokens=TOKENS, layers: int = 2, heads: int = 2) -> AttentionTrace:
    n = len(tokens)
    return AttentionTrace(tuple(tokens), tuple(tokens), weights(layers, heads, n, n), BOLD, "self")


def strings(value) -> list[str]:
    """Every string inside a figure's dict (arrays of objects included)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, np.ndarray):
        return strings(value.tolist()) if value.dtype == object or value.dtype.kind == "U" else []
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings(v)]
    return []


# --- shared attention figures ---------------------------------------------------------------------
@case("figures.attention.attention_heatmap")
def _():
    return figures_attention().attention_heatmap(weights(4, 4), TOKENS, TOKENS, title=BOLD), HOSTILE


@case("figures.attention.heads_mosaic")
def _():
    return figures_attention().heads_mosaic(weights(2, 2, 4, 4), row_label=LINK, title=BOLD + ENTITY), HOSTILE


@case("figures.grids.head_grid")
def _():
    from txviz.figures.grids import head_grid

    return head_grid(RNG.random((2, 3)), BOLD + LINK, ENTITY, pick=(1, 2)), HOSTILE


@case("whyattend.figures.edge_grid")
def _():
    from txviz.whyattend.figures import edge_grid

    return edge_grid(weights(4, 4), list(TOKENS), pick=(2, 1)), HOSTILE  # altair: kept verbatim


@case("figures.attention.token_focus_arcs")
def _():
    return figures_attention().token_focus_arcs(weights(4, 4), TOKENS, focus=1), HOSTILE


def figures_attention():
    from txviz.figures import attention

    return attention


# --- coreference ----------------------------------------------------------------------------------
def pair_attention():
    from txviz.coref.spans import PairAttention

    return PairAttention(RNG.random((2, 3, 2)), RNG.random((2, 3, 2)), (BOLD, LINK + " " + ENTITY))


@case("coref.figures.head_grids")
def _():
    from txviz.coref import figures

    return figures.head_grids(pair_attention(), selected=(0, 1)), HOSTILE  # altair: kept verbatim


@case("coref.figures.pair_heatmaps")
def _():
    from txviz.coref import figures
    from txviz.coref.spans import TokenSpans

    spans = TokenSpans(pronoun=(3,), candidates=((0,), (1,)))
    return figures.pair_heatmaps(trace(), trace(), 1, 0, spans, spans), HOSTILE


@case("coref.figures.answer_chart")
def _():
    from txviz.coref import figures

    return figures.answer_chart((BOLD, LINK), [(0.3, 0.7), (0.6, 0.4)], (ENTITY, "B")), HOSTILE


# --- generation -----------------------------------------------------------------------------------
def generation_steps(n_prompt: int = 2):
    from txviz.generation.loop import GenerationStep

    steps = []
    for index, token in enumerate(TOKENS[n_prompt:]):
        position = n_prompt + index
        steps.append(
            GenerationStep(
                index=index,
                position=position,
                token_id=index,
                token=token,
                text="".join(TOKENS[n_prompt : position + 1]),
                candidates=Candidates(
                    ids=(index, 8, 9),
                    tokens=HOSTILE,
                    probs=RNG.random((2, 3)).astype(np.float32),
                    stages=("model", BOLD),
                    chosen=index,
                ),
                attention=weights(2, 2, position),
                kv_tokens=(position,) * 2,
                kv_bytes=(1000,) * 2,
                elapsed_s=0.1,
            )
        )
    return steps


@case("generation.figures.candidate_bars")
def _():
    from txviz.generation import figures

    return figures.candidate_bars(generation_steps()[0]), HOSTILE


@case("generation.figures.newest_attention_head")
def _():
    from txviz.generation import figures

    return figures.newest_attention_head(generation_steps()[-1], TOKENS, 1, 0), HOSTILE


@case("generation.figures.newest_attention_all_heads")
def _():
    from txviz.generation import figures

    return figures.newest_attention_all_heads(generation_steps()[-1], TOKENS, 1), HOSTILE


@case("generation.figures.sequence_heatmap")
def _():
    from txviz.generation import figures

    return figures.sequence_heatmap(generation_steps(1), TOKENS, 1, 0), HOSTILE


# --- masks ----------------------------------------------------------------------------------------
def masks_figures():
    from txviz.masks import figures

    return figures


@case("masks.figures.mask_grid")
def _():
    mask = np.tril(np.ones((4, 4), dtype=bool))
    return masks_figures().mask_grid(mask, BOLD, TOKENS, TOKENS), HOSTILE


@case("masks.figures.mask_gallery")
def _():
    mask = np.ones((3, 3), dtype=bool)
    return masks_figures().mask_gallery([(t, mask) for t in HOSTILE]), HOSTILE


@case("masks.figures.fraction_kept_bars")
def _():
    return masks_figures().fraction_kept_bars(HOSTILE, [0.5, 0.25, 1.0], n=8), HOSTILE


@case("masks.figures.pairs_vs_n")
def _():
    return masks_figures().pairs_vs_n([4, 8], {t: [8, 16] for t in HOSTILE}), HOSTILE


@case("masks.figures.cost_curves")
def _():
    return masks_figures().cost_curves(
        [4, 8], [1, 4], [1, 2], [2, 2], unit=BOLD, title=LINK + ENTITY
    ), HOSTILE


@case("masks.figures.before_after")
def _():
    return masks_figures().before_after(weights(4, 4), weights(4, 4), TOKENS, BOLD), HOSTILE


@case("masks.figures.token_similarity_bars")
def _():
    return masks_figures().token_similarity_bars(TOKENS, RNG.random(4)), HOSTILE


# --- positional encodings ------------------------------------------------------------------------
def positional():
    from txviz.positional import encodings, figures

    return encodings, figures


@case("positional.figures.encoding_heatmap")
def _():
    return positional()[1].encoding_heatmap(RNG.random((4, 6)), BOLD, LINK + ENTITY), HOSTILE


@case("positional.figures.basis_curves")
def _():
    return positional()[1].basis_curves(RNG.random((4, 6)), [0, 1], BOLD + LINK + ENTITY), HOSTILE


@case("positional.figures.binary_table_figure")
def _():
    return positional()[1].binary_table_figure(np.eye(3, dtype=int), list(HOSTILE)), HOSTILE


@case("positional.figures.similarity_heatmap")
def _():
    return positional()[1].similarity_heatmap(RNG.random((4, 4)), BOLD + LINK + ENTITY), HOSTILE


@case("positional.figures.offset_curves")
def _():
    return positional()[1].offset_curves({BOLD: RNG.random(4)}, LINK, ENTITY), HOSTILE


@case("positional.figures.pca_figure")
def _():
    encodings, figures = positional()
    components = encodings.principal_components(RNG.random((5, 4)))
    return figures.pca_figure(components, BOLD + LINK + ENTITY), HOSTILE


@case("positional.figures.rope_frequencies_figure")
def _():
    return positional()[1].rope_frequencies_figure({t: RNG.random(3) + 0.1 for t in HOSTILE}), HOSTILE


@case("positional.figures.added_vs_concatenated_figure")
def _():
    encodings, figures = positional()
    parts = encodings.AddedVsConcatenated(*(RNG.random((4, 3)), RNG.random((4, 6))), *(RNG.random((3, 4, 4))))
    return figures.added_vs_concatenated_figure(parts, TOKENS), HOSTILE


@case("positional.figures.summary_figures")
def _():
    encodings, figures = positional()
    return figures.summary_figures(encodings.summarize(BOLD + LINK + ENTITY, RNG.random((5, 4)))), HOSTILE


# --- self-attention -------------------------------------------------------------------------------
def toy():
    from txviz.selfattention import figures, toy

    return toy, figures


def head_result(n: int = 4):
    toy_module, _ = toy()
    m = RNG.random((n, 2))
    return toy_module.HeadResult(m, m, m, RNG.random((n, n)), RNG.random((n, n)), weights(n, n), m, 1.0)


@case("selfattention.figures.matrix_figure")
def _():
    return toy()[1].matrix_figure(RNG.random((4, 4)), TOKENS, TOKENS, BOLD, LINK, ENTITY), HOSTILE


@case("selfattention.figures.weights_figure")
def _():
    return toy()[1].weights_figure(weights(4, 4), TOKENS, BOLD), HOSTILE


@case("selfattention.figures.routing_figure")
def _():
    return toy()[1].routing_figure(head_result(), TOKENS), HOSTILE


@case("selfattention.figures.heads_figure")
def _():
    toy_module, figures = toy()
    multi = toy_module.MultiHeadResult((head_result(), head_result()), None, None, None)
    return figures.heads_figure(multi, TOKENS), HOSTILE


@case("selfattention.figures.query_steps_figure")
def _():
    return toy()[1].query_steps_figure(TOKENS, RNG.random(4), weights(4), BOLD), HOSTILE


# --- encoder-decoder ------------------------------------------------------------------------------
def seq2seq_trace():
    from txviz.seq2seq.decoding import DecodeStep, Seq2SeqTrace

    source, target = TOKENS, ("<s>", *HOSTILE)
    steps = tuple(
        DecodeStep(
            i, token, i, 0.5, Candidates((i, 5, 6), HOSTILE, np.full((1, 3), 0.3, np.float32), chosen=i)
        )
        for i, token in enumerate((*HOSTILE, "</s>"))
    )
    n, s = len(target), len(source)
    return Seq2SeqTrace(
        source_tokens=source,
        target_tokens=target,
        output_text=BOLD,
        steps=steps,
        encoder=AttentionTrace(source, source, weights(1, 2, s, s), "m", "self"),
        decoder=AttentionTrace(target, target, weights(1, 2, n, n), "m", "causal"),
        cross=AttentionTrace(target, source, weights(1, 2, n, s), "m", "cross"),
        method=ENTITY,
        finished=True,
    )


def seq2seq_figures():
    from txviz.seq2seq import figures

    return figures


@case("seq2seq.figures.attention_head")
def _():
    return [
        seq2seq_figures().attention_head(seq2seq_trace(), kind, 0, 1) for kind in ("cross", "decoder")
    ], HOSTILE


@case("seq2seq.figures.all_heads")
def _():
    return seq2seq_figures().all_heads(seq2seq_trace(), "cross"), ()  # a mosaic of numbers only


@case("seq2seq.figures.step_attention")
def _():
    return seq2seq_figures().step_attention(seq2seq_trace(), 3, 0, 0), HOSTILE


@case("seq2seq.figures.chosen_probabilities")
def _():
    return seq2seq_figures().chosen_probabilities(seq2seq_trace(), 1), HOSTILE


@case("seq2seq.figures.step_alternatives")
def _():
    return seq2seq_figures().step_alternatives(seq2seq_trace().steps[0]), HOSTILE


# --- soft vs hard ---------------------------------------------------------------------------------
def softhard():
    from txviz.softhard import figures

    return figures


@case("softhard.figures.side_by_side_heatmaps")
def _():
    figures = softhard()
    return figures.side_by_side_heatmaps([figures.Panel(BOLD, weights(4, 4), TOKENS, TOKENS)]), HOSTILE


@case("softhard.figures.heatmaps_of")
def _():
    return softhard().heatmaps_of({ENTITY: (weights(4, 4), TOKENS, TOKENS)}, LINK, BOLD), HOSTILE


@case("softhard.figures.normalizer_heatmaps")
def _():
    comparison = SimpleNamespace(traces={BOLD: trace()}, settings=SimpleNamespace(label=lambda name: name))
    return softhard().normalizer_heatmaps(comparison, 1, 1), HOSTILE


@case("softhard.figures.entropy_bars")
def _():
    return softhard().entropy_bars({t: RNG.random((2, 3)) for t in HOSTILE}, 1), HOSTILE


@case("softhard.figures.similarity_bars")
def _():
    return softhard().similarity_bars({t: 0.9 for t in HOSTILE}), HOSTILE


@case("softhard.figures.training_curves")
def _():
    curves = {t: {"step": [0, 1], "accuracy": [0.1, 0.5], "entropy": [1.0, 0.5]} for t in HOSTILE}
    return softhard().training_curves(curves, chance=0.25), HOSTILE


# --- tokenization ---------------------------------------------------------------------------------
def tokenization():
    from txviz.tokenization import bpe, figures, subwords

    return bpe, figures, subwords


@case("tokenization.figures.step_heatmap")
def _():
    bpe, figures, _ = tokenization()
    corpus = " ".join([BOLD, LINK, ENTITY] * 4)
    return figures.step_heatmap(bpe.train_bpe(corpus, max_merges=60), 20), ()  # pieces: no whole token


@case("tokenization.figures.merge_tree")
def _():
    bpe, figures, _ = tokenization()
    stages = [bpe.MergeStage(0, ("<", "b"), ("<b", ">")), bpe.MergeStage(1, ("<b", ">"), ("<b>",))]
    return figures.merge_tree(["<", "b", ">"], stages, BOLD + LINK + ENTITY), HOSTILE


@case("tokenization.figures.token_strips")
def _():
    _, figures, subwords = tokenization()
    words = [
        subwords.WordTokens(t, (t,), (), (t,), (t,), (i,), ((0, len(t)),)) for i, t in enumerate(HOSTILE)
    ]
    return figures.token_strips([(BOLD, words)]), HOSTILE


# --- vision ---------------------------------------------------------------------------------------
def vision():
    from txviz.vision import figures
    from txviz.vision.patches import PatchGrid

    return figures, PatchGrid(8, 8, 4, 4, prefix_tokens=HOSTILE)


@case("vision.figures.patch_sequence_figure")
def _():
    figures, grid = vision()
    return figures.patch_sequence_figure(np.zeros((8, 8, 3), dtype=np.uint8), grid), HOSTILE


@case("vision.figures.attention_overlay_figure")
def _():
    figures, grid = vision()
    image = np.zeros((8, 8, 3), dtype=np.uint8)
    return figures.attention_overlay_figure(
        image, RNG.random((2, 2)), grid, title=BOLD + LINK + ENTITY
    ), HOSTILE


@case("vision.figures.probability_bars_figure")
def _():
    return vision()[0].probability_bars_figure(list(TOKENS), np.array([0.1, 0.2, 0.3, 0.4])), HOSTILE


# --- the checks -----------------------------------------------------------------------------------
# --- textbook items: objectives, equivariance, teacher forcing ------------------------------------
@case("objectives.figures.next_token_figure")
def _():
    from txviz.objectives.causal import NextTokenObjective
    from txviz.objectives.figures import next_token_figure

    objective = NextTokenObjective(tuple(TOKENS), RNG.random(len(TOKENS) - 1), tuple(TOKENS[1:]))
    return next_token_figure(objective), HOSTILE


@case("objectives.figures.masked_figure")
def _():
    from txviz.objectives.figures import masked_figure
    from txviz.objectives.masked import MaskedPrediction

    top = ((BOLD, 0.5), (LINK, 0.2))
    prediction = MaskedPrediction(tuple(TOKENS), (1, 2), (top, top), RNG.random(2))
    return masked_figure(prediction), HOSTILE


@case("selfattention.figures.equivariance_figure")
def _():
    from txviz.selfattention.figures import equivariance_figure

    outputs = RNG.random((len(TOKENS), 4))
    return equivariance_figure(outputs, outputs + 1e-7, TOKENS), HOSTILE


@case("seq2seq.figures.forcing_figure")
def _():
    from txviz.seq2seq.figures import forcing_figure
    from txviz.seq2seq.teacher import ForcingComparison, ForcingStep

    steps = tuple(
        ForcingStep(i, BOLD, LINK, ENTITY, 0.5, LINK, BOLD, 0.25) for i in range(2)
    )  # fmt: skip
    return forcing_figure(ForcingComparison(steps, BOLD, LINK, 1)), HOSTILE


# --- head detectors and the query-key space ------------------------------------------------------
def head_scores(model_name: str = BOLD):
    from txviz.heads import detectors
    from txviz.heads.runs import HeadScores

    dets = detectors.detectors()
    grid = RNG.random((2, 3))
    return HeadScores(
        model_name, dets, {d.name: grid for d in dets}, {d.name: np.zeros((2, 3), int) for d in dets},
        (BOLD,), grid, grid, "", 0.1,
    )  # fmt: skip


def qk_points():
    from txviz.heads.qkspace import QKPoints

    n = len(TOKENS)
    return QKPoints(
        RNG.random((2 * n, 2)), np.arange(2 * n) >= n, TOKENS + TOKENS, np.tile(np.arange(n), 2),
        np.zeros(2 * n, int), TOKENS + TOKENS, "PCA", 0.5,
    )  # fmt: skip


@case("heads.figures.qk_scatter")
def _():
    from txviz.heads.figures import qk_scatter

    return [qk_scatter(qk_points(), by, title=BOLD) for by in ("query / key", "token")], HOSTILE


@case("heads.figures.qk_small_multiples")
def _():
    from txviz.heads.figures import qk_small_multiples

    return qk_small_multiples([qk_points(), qk_points()], title=LINK), HOSTILE


@case("heads.figures.measure_bars")
def _():
    from txviz.heads.attribution import TokenComparison
    from txviz.heads.figures import measure_bars

    n = len(TOKENS)
    measures = {name: np.full(n, 1 / n) for name in ("attention", "rollout", "gradient x input", "ig")}
    comparison = TokenComparison(
        TOKENS, (False,) * n, measures, np.eye(4), np.ones(n, bool), BOLD, 0.0, 1.0, 0.1,
    )  # fmt: skip
    return measure_bars(comparison), HOSTILE


@case("heads.figures.depth_profiles")
def _():
    from txviz.heads.figures import depth_profiles

    return depth_profiles(head_scores(BOLD), head_scores(LINK + ENTITY), "entropy (nats)"), HOSTILE


# --- transformer block ----------------------------------------------------------------------------
def block_figures():
    from txviz.block import figures

    return figures


def block_steps():
    from txviz.block.ops import Step

    n = len(TOKENS)
    return (
        Step(BOLD, "code", weights(2, n, n), ("head", "query", "key")),
        Step(LINK, "code", RNG.standard_normal((n, 3)).astype(np.float32), ("token", "feature")),
        Step(ENTITY, "code", RNG.standard_normal(3).astype(np.float32), ("feature",)),
    )


def block_lens():
    from txviz.block.lens import Lens

    n = len(TOKENS)
    return Lens(
        TOKENS, np.zeros((2, n), np.int64), RNG.random((2, n)).astype(np.float32), (TOKENS, TOKENS),
        np.array([[3, 0, 1, 2], [0, 0, 0, 0]]), RNG.random((2, n)).astype(np.float32),
    )  # fmt: skip


@case("block.figures.data_flow")
def _():
    from txviz.block.dataflow import Stage

    boxes = (Stage("a", BOLD + "\n" + LINK, "d"), Stage("b", ENTITY, "d"))
    return block_figures().data_flow(boxes, "a", title=LINK + ENTITY), HOSTILE


@case("block.figures.matrix")
def _():
    values = RNG.standard_normal((4, 4))
    return block_figures().matrix(values, TOKENS, BOLD, (LINK, ENTITY), cols=TOKENS), HOSTILE


@case("block.figures.stage_figure")
def _():
    from txviz.block.dataflow import StageValues

    n, figures = len(TOKENS), block_figures()
    return [
        figures.stage_figure(StageValues(BOLD, ids=tuple(range(n))), TOKENS),
        figures.stage_figure(StageValues(LINK, top_tokens=HOSTILE + ("x",), top_probs=RNG.random(n)), TOKENS),
        figures.stage_figure(StageValues(ENTITY, RNG.standard_normal((n, 3))), TOKENS),
    ], HOSTILE


@case("block.figures.step_figure")
def _():
    figures, memory = block_figures(), ("m", *HOSTILE, "k")
    attention, rows, vector = block_steps()
    cross = attention.__class__(LINK, "code", weights(1, len(TOKENS), len(memory)), attention.axes)
    return [
        figures.step_figure(attention, TOKENS, head=1, n_heads=4),
        figures.step_figure(cross, TOKENS, memory_tokens=memory, n_heads=2),
        figures.step_figure(rows, TOKENS),
        figures.step_figure(vector, TOKENS),
    ], HOSTILE


@case("block.figures.steps_overview")
def _():
    return block_figures().steps_overview(block_steps(), head=1, columns=2), HOSTILE


@case("block.figures.residual_heatmap")
def _():
    values = RNG.random((3, len(TOKENS)))
    return [
        block_figures().residual_heatmap(values, TOKENS, BOLD + LINK + ENTITY, stream=stream)
        for stream in (False, True)
    ], HOSTILE


@case("block.figures.residual_bars")
def _():
    return block_figures().residual_bars({t: RNG.random(3) + 0.1 for t in HOSTILE}), HOSTILE


@case("block.figures.lens_grid")
def _():
    return block_figures().lens_grid(block_lens()), HOSTILE


@case("block.figures.lens_position")
def _():
    return [block_figures().lens_position(block_lens(), p, t) for p, t in enumerate(HOSTILE)], HOSTILE


@case("block.figures.norm_statistics")
def _():
    labels = [f"s1: {t}" for t in TOKENS]
    n = len(labels)
    return block_figures().norm_statistics(*RNG.random((2, n)), *RNG.random((2, 5)), labels), HOSTILE


@case("block.figures.dependence_bars")
def _():
    from txviz.block.norms import Dependence

    dep = Dependence(RNG.random(len(TOKENS)), RNG.random(len(TOKENS)))
    return block_figures().dependence_bars(dep, TOKENS, BOLD + LINK + ENTITY), HOSTILE


# --- entailment ------------------------------------------------------------------------------------
@case("entailment.figures.word_heatmap")
def _():
    from txviz.entailment.figures import word_heatmap

    n = len(TOKENS)
    return word_heatmap(RNG.random((n, n)), TOKENS, TOKENS, BOLD, "e_ij"), HOSTILE


@case("entailment.figures.vectors_heatmap")
def _():
    from txviz.entailment.figures import vectors_heatmap

    return vectors_heatmap(RNG.random((len(TOKENS), 4)), TOKENS, BOLD, "v"), HOSTILE


# --- explain ---------------------------------------------------------------------------------------
@case("explain.figures.measures_heatmap")
def _():
    from txviz.explain.figures import measures_heatmap

    measures = {BOLD: RNG.random(len(TOKENS)) - 0.5, LINK: RNG.random(len(TOKENS))}
    return measures_heatmap(TOKENS, measures, ENTITY), HOSTILE


@case("explain.figures.correlation_heatmap")
def _():
    from txviz.explain.figures import correlation_heatmap

    return correlation_heatmap(HOSTILE, np.eye(3)), HOSTILE


@case("explain.figures.lens_figure")
def _():
    from txviz.explain.figures import lens_figure
    from txviz.explain.step import StepLens

    n = len(TOKENS)
    lens = StepLens(1, np.arange(n), RNG.random(n), np.arange(n), RNG.random(n), TOKENS)
    return lens_figure(lens, BOLD), HOSTILE


@case("explain.figures.step_scores_strip")
def _():
    from txviz.explain.figures import step_scores_strip
    from txviz.explain.scores import StepScores

    n = len(TOKENS)
    return step_scores_strip(StepScores(*RNG.random((4, n))), TOKENS, current=1), HOSTILE


@case("explain.figures.source_attribution_figure")
def _():
    from txviz.explain.figures import source_attribution_figure
    from txviz.explain.seq2seq import SourceAttribution

    n = len(TOKENS)
    attribution = SourceAttribution(0, TOKENS, RNG.random(n), RNG.random(n), "gradient", LINK)
    return source_attribution_figure(attribution, ENTITY), HOSTILE


# --- interventions ---------------------------------------------------------------------------------
def interventions_figures():
    from txviz.interventions import figures

    return figures


@case("interventions.figures.layer_position_grid")
def _():
    n = len(TOKENS)
    figure = interventions_figures().layer_position_grid(
        RNG.random((3, n)), TOKENS, BOLD, unit=LINK, row_names=(ENTITY, "a", "b")
    )
    return figure, HOSTILE


@case("interventions.figures.layer_bars")
def _():
    return interventions_figures().layer_bars(RNG.random(3), BOLD, unit=LINK + ENTITY), HOSTILE


@case("interventions.figures.exact_vs_estimate")
def _():
    return interventions_figures().exact_vs_estimate(RNG.random(4), RNG.random(4), TOKENS, BOLD), HOSTILE


@case("interventions.figures.before_after_bars")
def _():
    return interventions_figures().before_after_bars(TOKENS, RNG.random(4), RNG.random(4), LINK), HOSTILE


@case("interventions.figures.attention_change")
def _():
    return interventions_figures().attention_change(weights(4, 4), weights(4, 4), TOKENS, BOLD), HOSTILE


def lecture_question(kind: str, **fields):
    from txviz.lecture.questions import question_from

    return question_from({"kind": kind, "prompt": BOLD, "text": LINK, "layer": 1, "head": 2, **fields})


@case("lecture.figures.bars")
def _():
    from txviz.lecture import figures

    return figures.bars(TOKENS, [0.1, 0.2, 0.3, 0.4], BOLD, "weight", truth=1, marked=2), HOSTILE


@case("lecture.figures.truth_figure")
def _():
    from txviz.lecture import figures
    from txviz.lecture.questions import Truth

    row = Truth("attends_to", 0, BOLD, TOKENS, np.full(len(TOKENS), 0.25), query=1)
    candidates = Candidates((1, 2, 3), HOSTILE, np.full((1, 3), 0.3, np.float32))
    nxt = Truth("next_token", BOLD, BOLD, candidates=candidates)
    return [
        figures.truth_figure(lecture_question("attends_to", word=1), row, 2),
        figures.truth_figure(lecture_question("next_token"), nxt, LINK),
    ], HOSTILE


@case("lecture.figures.tally_figure")
def _():
    from txviz.lecture import figures

    return figures.tally_figure(dict.fromkeys(HOSTILE, 2), BOLD), HOSTILE


@case("lecture.figures.outline_figure")
def _():
    from txviz.lecture import figures
    from txviz.lecture.files import Lecture, Step

    steps = tuple(Step("Attention_Explorer", {}, title=text) for text in HOSTILE)
    return figures.outline_figure(Lecture("x", BOLD, LINK, "minilm", steps)), HOSTILE


def test_every_figure_builder_is_checked_or_listed_as_showing_no_text():
    found = set(builders())
    assert len(found) > 40, "discovery found too few builders: is the module walk broken?"
    missing = found - set(CASES) - NO_TEXT
    assert not missing, f"new figure builders without an escaping case here: {sorted(missing)}"
    assert not (set(CASES) | NO_TEXT) - found, "cases for builders that no longer exist"


@pytest.mark.parametrize("name", sorted(CASES))
def test_token_and_user_text_is_shown_literally(name: str):
    made, fed = CASES[name]()
    figures = made if isinstance(made, list) else [made]
    if not hasattr(figures[0], "to_plotly_json"):
        return text_is_kept_verbatim(name, figures, fed)
    texts = [s for figure in figures for s in strings(figure.to_dict())]
    for text in texts:
        bare = OWN_MARKUP.sub("", text)
        assert "<" not in bare and ">" not in bare.replace("->", ""), (
            f"{name}: markup reaches plotly: {text!r}"
        )
        assert not re.search(r"&(?!amp;|lt;|gt;|#\d+;)", text), f"{name}: a bare & in {text!r}"
    joined = "\n".join(texts)
    for hostile in fed:
        assert ESCAPED[hostile] in joined, f"{name}: {hostile!r} is not shown (escaped) anywhere"
        assert hostile not in OWN_MARKUP.sub("", joined).replace(ESCAPED[hostile], ""), name


def text_is_kept_verbatim(name: str, charts: list, fed: tuple[str, ...]) -> None:
    """Altair: Vega draws titles, labels and tooltips as text, never HTML, so text must reach the spec
    unchanged; escaping it would show "&lt;b&gt;" on screen."""
    texts = [s for chart in charts for s in strings(chart.to_dict())]
    for hostile in fed:
        assert hostile in texts or any(hostile in t for t in texts), f"{name}: {hostile!r} is not shown"
        assert not any(ESCAPED[hostile] in t for t in texts), f"{name}: {hostile!r} is escaped for Vega"


def test_the_escaping_check_catches_a_builder_that_forgets():
    import plotly.graph_objects as go

    figure = go.Figure(go.Bar(x=[0], y=[1]))
    figure.update_xaxes(tickmode="array", tickvals=[0], ticktext=[BOLD])  # raw, as the bug did
    texts = strings(figure.to_dict())
    assert any("<" in OWN_MARKUP.sub("", t) for t in texts)


# --- long documents -------------------------------------------------------------------------------
def longdoc_figures():
    from txviz.longdoc import figures

    return figures


@case("longdoc.figures.pooled_figure")
def _():
    return longdoc_figures().pooled_figure(RNG.random((4, 4)), 16, title=BOLD + LINK + ENTITY), HOSTILE


@case("longdoc.figures.span_figure")
def _():
    labels = [f"{i} · {t}" for i, t in enumerate(TOKENS)]
    return longdoc_figures().span_figure(weights(4, 4), labels, title=BOLD), HOSTILE


@case("longdoc.figures.sinks_figure")
def _():
    return longdoc_figures().sinks_figure(RNG.random(4), TOKENS, top=4), HOSTILE


@case("longdoc.figures.rows_figure")
def _():
    figure = longdoc_figures().rows_figure(
        weights(2, 4), [1, 2], [0, 1, 2, 3], TOKENS[1:3], TOKENS, TOKENS[:2], TOKENS, title=BOLD
    )
    return figure, HOSTILE


@case("longdoc.figures.row_profile_figure")
def _():
    return longdoc_figures().row_profile_figure(RNG.random(4), TOKENS, 1, 3), HOSTILE


# --- textbook items, round three: learning curves, parallel decoding, using an encoder -------------
@case("vision.figures.learning_curves_figure")
def _():
    from txviz.vision.curves import Curves
    from txviz.vision.figures import learning_curves_figure

    sizes = (50, 100)
    curves = Curves(
        sizes, {BOLD: RNG.random(2)}, {LINK + ENTITY: RNG.random(2)}, {BOLD: 1}, {BOLD: (1, 1)}, 360
    )
    return learning_curves_figure(curves), HOSTILE


@case("seq2seq.figures.parallel_accuracy_figure")
def _():
    from txviz.seq2seq.figures import parallel_accuracy_figure
    from txviz.seq2seq.parallel import Comparison

    comparison = Comparison((1, 2), {BOLD: RNG.random(2), LINK + ENTITY: RNG.random(2)}, 1.5, 1.0, 11.0, 10)
    return parallel_accuracy_figure(comparison), HOSTILE


@case("seq2seq.figures.refinement_figure")
def _():
    from txviz.seq2seq.figures import refinement_figure
    from txviz.seq2seq.parallel import OneSource

    canvases = ((BOLD, LINK, ENTITY), (BOLD, "x", ENTITY))
    one = OneSource(BOLD, 3, canvases, RNG.random((2, 3)), np.ones((2, 3), bool), (BOLD, LINK))
    return refinement_figure(one), HOSTILE


@case("objectives.figures.cls_attention_figure")
def _():
    from txviz.objectives.encoder_tasks import Reading
    from txviz.objectives.figures import cls_attention_figure

    reading = Reading(("[CLS]", *HOSTILE, "[SEP]"), 0.5, RNG.random(3), weights(2, 2, 5))
    return cls_attention_figure(reading), HOSTILE


@case("objectives.figures.word_tags_figure")
def _():
    from txviz.objectives.encoder_tasks import Reading
    from txviz.objectives.figures import word_tags_figure

    reading = Reading(("[CLS]", *HOSTILE, "[SEP]"), 0.5, RNG.random(3), weights(2, 2, 5))
    return word_tags_figure(reading), HOSTILE
